/* The cost of the C boundary: uncontended acquire+release pairs through the C API, beside the same
 * loop through the Rust API on polylock's runtime, in the same process and run; then the fair
 * lock's pair beside the plain lock's, through the C API, in alternating rounds.
 *   bash bindings-c/bench.sh [URL] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "polylock.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    const int n = 2000, rounds = 7;
    double diffs[7], ffi[7];
    polylock_client *c = NULL;
    polylock_lock *l = NULL;
    if (polylock_client_connect(url, &c) != POLYLOCK_OK || polylock_lock_new(c, "polylock-bench:c", &l) != POLYLOCK_OK) {
        fprintf(stderr, "cannot connect to %s\n", url);
        return 1;
    }
    uint64_t me = polylock_owner_current_thread();
    double *v = malloc(n * sizeof *v);
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < 300; i++) { /* warm up */
            polylock_lock_acquire(l, me, -1, -1);
            polylock_lock_release(l, me);
        }
        for (int i = 0; i < n; i++) {
            double t = now_ns();
            if (polylock_lock_acquire(l, me, -1, -1) != POLYLOCK_OK || polylock_lock_release(l, me) != POLYLOCK_OK) return 1;
            v[i] = now_ns() - t;
        }
        qsort(v, n, sizeof *v, cmp);
        double c_p50 = v[n / 2];
        uint64_t rust_async = 0, rust_blocking = 0;
        if (polylock_bench_rust_pairs(l, me, (uint32_t)n, false, &rust_async) != POLYLOCK_OK) return 1;
        if (polylock_bench_rust_pairs(l, me, (uint32_t)n, true, &rust_blocking) != POLYLOCK_OK) return 1;
        diffs[round] = (c_p50 - (double)rust_async) / 1e3;
        ffi[round] = (c_p50 - (double)rust_blocking) / 1e3;
        printf("round %d: pair p50 through C %.1f us; Rust async on the runtime %.1f us; Rust blocking this thread %.1f us\n",
               round + 1, c_p50 / 1e3, rust_async / 1e3, rust_blocking / 1e3);
    }
    qsort(diffs, rounds, sizeof *diffs, cmp);
    qsort(ffi, rounds, sizeof *ffi, cmp);
    printf("medians of %d alternating rounds, per acquire+release pair:\n", rounds);
    printf("  C caller vs async Rust:              %+.1f us (target <= 5 us)\n", diffs[rounds / 2]);
    printf("  of which the C boundary itself:      %+.1f us (C vs Rust blocking the same thread)\n", ffi[rounds / 2]);
    /* The fair lock beside the plain lock: the same loop, rounds alternating between the two. */
    polylock_lock *fair = NULL;
    if (polylock_client_fair_lock(c, "polylock-bench:c-fair", &fair) != POLYLOCK_OK) return 1;
    double plain_p50[7], fair_p50[7];
    for (int round = 0; round < rounds; round++) {
        polylock_lock *pair_of[2] = {l, fair};
        double *into[2] = {plain_p50, fair_p50};
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < 300; i++) {
                polylock_lock_acquire(pair_of[k], me, -1, -1);
                polylock_lock_release(pair_of[k], me);
            }
            for (int i = 0; i < n; i++) {
                double t = now_ns();
                if (polylock_lock_acquire(pair_of[k], me, -1, -1) != POLYLOCK_OK ||
                    polylock_lock_release(pair_of[k], me) != POLYLOCK_OK) return 1;
                v[i] = now_ns() - t;
            }
            qsort(v, n, sizeof *v, cmp);
            into[k][round] = v[n / 2];
        }
    }
    qsort(plain_p50, rounds, sizeof *plain_p50, cmp);
    qsort(fair_p50, rounds, sizeof *fair_p50, cmp);
    printf("  fair-lock pair p50 %.1f us beside the plain pair %.1f us: %.2f x (target <= 1.3)\n",
           fair_p50[rounds / 2] / 1e3, plain_p50[rounds / 2] / 1e3, fair_p50[rounds / 2] / plain_p50[rounds / 2]);
    polylock_lock_free(fair);
    free(v);
    polylock_lock_free(l);
    polylock_client_free(c);
    return 0;
}
