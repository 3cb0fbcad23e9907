// ICU's sentence break iterator for Swift, through plain C types only. ICU's C functions carry
// the library's version in their symbol names (`ubrk_open` is a macro for `ubrk_open_72`),
// which Swift cannot call by the plain name, and Foundation on Linux carries its own copy of
// ICU's headers, whose types would clash with the system's in one Swift module: so ICU's
// headers stay in sluice_icu.c, and Swift sees only these.
#ifndef SLUICE_ICU_H
#define SLUICE_ICU_H
#include <stdint.h>

/// A sentence break iterator for `locale` ("de", "en_US"; "" for the root rules), with no
/// text yet; NULL when ICU cannot make one.
void *sluice_icu_sentence_iterator(const char *locale);

/// An iterator of its own with `iterator`'s rules and locale; NULL on failure.
void *sluice_icu_clone(const void *iterator);

/// Cuts `text` (`length` UTF-16 units) with `iterator`, writing the offset just after each
/// sentence into `boundaries` (at most `capacity`, in order, the text's end last). Returns how
/// many were written, or -1 when ICU failed. `iterator` keeps no pointer to `text` afterwards.
int32_t sluice_icu_sentence_boundaries(void *iterator, const uint16_t *text, int32_t length, int32_t *boundaries, int32_t capacity);

void sluice_icu_close(void *iterator);

/// Whether ICU knows the language of `locale` (an ISO 639 code: "de", "en_US"); a voice id
/// such as "21m00Tcm4TlvDq8ikWAM" is none.
int sluice_icu_knows_language(const char *locale);
#endif
