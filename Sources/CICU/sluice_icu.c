#include "sluice_icu.h"
#include <unicode/ubrk.h>
#include <unicode/uloc.h>

void *sluice_icu_sentence_iterator(const char *locale) {
    UErrorCode status = U_ZERO_ERROR;
    UBreakIterator *iterator = ubrk_open(UBRK_SENTENCE, locale, NULL, 0, &status);
    if (U_FAILURE(status)) {
        if (iterator) ubrk_close(iterator);
        return NULL;
    }
    return iterator;
}

void *sluice_icu_clone(const void *iterator) {
    UErrorCode status = U_ZERO_ERROR;
    UBreakIterator *copy = ubrk_clone((const UBreakIterator *)iterator, &status);
    if (U_FAILURE(status)) {
        if (copy) ubrk_close(copy);
        return NULL;
    }
    return copy;
}

int32_t sluice_icu_sentence_boundaries(void *iterator, const uint16_t *text, int32_t length, int32_t *boundaries, int32_t capacity) {
    UBreakIterator *breaks = iterator;
    UErrorCode status = U_ZERO_ERROR;
    ubrk_setText(breaks, (const UChar *)text, length, &status);
    if (U_FAILURE(status)) return -1;
    int32_t count = 0;
    ubrk_first(breaks);
    for (int32_t offset = ubrk_next(breaks); offset != UBRK_DONE && count < capacity; offset = ubrk_next(breaks)) {
        boundaries[count++] = offset;
    }
    // The iterator must not keep a pointer to text its caller frees.
    status = U_ZERO_ERROR;
    ubrk_setText(breaks, NULL, 0, &status);
    return count;
}

void sluice_icu_close(void *iterator) { ubrk_close(iterator); }

int sluice_icu_knows_language(const char *locale) {
    const char *code = uloc_getISO3Language(locale);
    return code != NULL && code[0] != '\0';
}
