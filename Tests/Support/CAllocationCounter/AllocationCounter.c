// Weak definitions of the allocation functions that count, per thread, and forward to
// glibc's implementations (__libc_malloc and friends). Weak, so that a sanitizer runtime
// linked into the same executable keeps its own strong definitions instead of clashing.
#define _GNU_SOURCE
#include "CAllocationCounter.h"

#include <dlfcn.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

// Initial-exec TLS in the executable: reading it never allocates.
static __thread int counting;
static __thread uint64_t allocations;

// One other thread may be watched from outside (a JACK process thread the test does not
// run code on): its allocations are counted in a shared atomic.
static _Atomic int watching;
static pthread_t watched;
static _Atomic uint64_t watched_allocations;

static inline void note_allocation(void) {
    if (counting) allocations += 1;
    if (atomic_load_explicit(&watching, memory_order_acquire) && pthread_equal(pthread_self(), watched)) {
        atomic_fetch_add_explicit(&watched_allocations, 1, memory_order_relaxed);
    }
}

__attribute__((weak)) void *malloc(size_t size) {
    note_allocation();
    return __libc_malloc(size);
}

__attribute__((weak)) void *calloc(size_t count, size_t size) {
    note_allocation();
    return __libc_calloc(count, size);
}

__attribute__((weak)) void *realloc(void *pointer, size_t size) {
    note_allocation();
    return __libc_realloc(pointer, size);
}

__attribute__((weak)) void free(void *pointer) {
    __libc_free(pointer);
}

__attribute__((weak)) int posix_memalign(void **result, size_t alignment, size_t size) {
    note_allocation();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

__attribute__((weak)) void *aligned_alloc(size_t alignment, size_t size) {
    note_allocation();
    return __libc_memalign(alignment, size);
}

__attribute__((weak)) void *memalign(size_t alignment, size_t size) {
    note_allocation();
    return __libc_memalign(alignment, size);
}

void sluice_allocation_counter_begin(void) {
    allocations = 0;
    counting = 1;
}

uint64_t sluice_allocation_counter_end(void) {
    counting = 0;
    return allocations;
}

bool sluice_allocation_counter_is_active(void) {
    sluice_allocation_counter_begin();
    // volatile: the compiler may not elide this malloc/free pair.
    void *volatile probe = malloc(16);
    free(probe);
    return sluice_allocation_counter_end() > 0;
}

bool sluice_sanitizer_runtime_present(void) {
    static const char *const entry_points[] = {"__tsan_init", "__asan_init", "__rtsan_realtime_enter"};
    for (size_t index = 0; index < sizeof entry_points / sizeof entry_points[0]; index++) {
        if (dlsym(RTLD_DEFAULT, entry_points[index]) != NULL) return true;
    }
    return false;
}

void sluice_allocation_counter_watch(pthread_t thread) {
    atomic_store_explicit(&watching, 0, memory_order_release);
    watched = thread;
    atomic_store_explicit(&watched_allocations, 0, memory_order_relaxed);
    atomic_store_explicit(&watching, 1, memory_order_release);
}

uint64_t sluice_allocation_counter_watched(void) {
    return atomic_load_explicit(&watched_allocations, memory_order_relaxed);
}

uint64_t sluice_allocation_counter_unwatch(void) {
    atomic_store_explicit(&watching, 0, memory_order_release);
    return atomic_load_explicit(&watched_allocations, memory_order_relaxed);
}
