/* A seckill (flash sale) buyer in C, the same buyer as examples/rust/seckill.rs: the stock lives in
 * Redis (read with hiredis), one polylock lock keeps two buyers from selling one item twice, and
 * each sale is a fenced write (polylock_fence_write under the lock's fencing token), so a buyer
 * whose lease ended while it was paused cannot sell after a later buyer did. Prints one JSON line:
 * purchases and lock-wait p50/p99.
 *
 *   seckill_buyer [--url redis://127.0.0.1:6379] [--lock-url URL] [--name goods] [--max N] [--delay-ms D]
 *                 [--sections FILE (each critical section: "start_us end_us token")]
 *                 [--start-at EPOCH_MS (start buying then)]
 */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "polylock.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Microseconds on the machine's monotonic clock: the demo's section stamps, read the same way by
 * every buyer so that they compare across processes. */
static long long section_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Wall-clock microseconds since the epoch (the coordinated start). */
static long long epoch_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long long get_int(redisContext *r, const char *key, long long dflt) {
    redisReply *rep = redisCommand(r, "GET %s", key);
    long long v = dflt;
    if (rep && rep->type == REDIS_REPLY_STRING) v = atoll(rep->str);
    freeReplyObject(rep);
    return v;
}

int main(int argc, char **argv) {
    const char *url = "redis://127.0.0.1:6379", *lock_url = NULL, *name = "goods";
    long max = -1, delay_ms = 1;
    const char *sections_path = NULL;
    long long start_at = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--url")) url = argv[i + 1];
        else if (!strcmp(argv[i], "--lock-url")) lock_url = argv[i + 1];
        else if (!strcmp(argv[i], "--name")) name = argv[i + 1];
        else if (!strcmp(argv[i], "--max")) max = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--delay-ms")) delay_ms = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--sections")) sections_path = argv[i + 1];
        else if (!strcmp(argv[i], "--start-at")) start_at = atoll(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 64; }
    }
    if (!lock_url) lock_url = url;
    char host[256] = "127.0.0.1";
    int port = 6379;
    if (sscanf(url, "redis://%255[^:]:%d", host, &port) < 1) { fprintf(stderr, "bad --url\n"); return 64; }
    redisContext *r = redisConnect(host, port);
    if (!r || r->err) { fprintf(stderr, "redis: %s\n", r ? r->errstr : "no memory"); return 69; }

    char stock_key[256], sold_key[256], token_key[256], lock_name[256], detail[512];
    snprintf(stock_key, sizeof stock_key, "seckill:%s:stock", name);
    snprintf(sold_key, sizeof sold_key, "seckill:%s:sold", name);
    snprintf(token_key, sizeof token_key, "seckill:%s:last-token", name);
    if (!strncmp(lock_url, "zk://", 5)) snprintf(lock_name, sizeof lock_name, "/seckill/%s", name);
    else snprintf(lock_name, sizeof lock_name, "seckill:%s", name);

    polylock_client *client = NULL;
    polylock_lock *lock = NULL;
    if (polylock_client_connect(lock_url, &client) != POLYLOCK_OK ||
        polylock_lock_new(client, lock_name, &lock) != POLYLOCK_OK) {
        polylock_last_error_message(detail, sizeof detail);
        fprintf(stderr, "polylock: %s\n", detail);
        return 69;
    }
    /* Each sale is a fenced write on the Redis of the stock (the lock may be elsewhere). */
    polylock_client *fence_client = NULL;
    polylock_fence *fence = NULL;
    if (polylock_client_connect(url, &fence_client) != POLYLOCK_OK ||
        polylock_fence_new(fence_client, lock_name, &fence) != POLYLOCK_OK) {
        polylock_last_error_message(detail, sizeof detail);
        fprintf(stderr, "polylock: %s\n", detail);
        return 69;
    }
    uint64_t me = polylock_owner_current_thread();
    size_t cap = 1024, n = 0;
    double *waits = malloc(cap * sizeof *waits);
    long long *sections = malloc(cap * 3 * sizeof *sections); /* start, end, token per section */
    if (start_at > 0) {
        long long us = start_at * 1000 - epoch_us();
        if (us > 0) {
            struct timespec d = {us / 1000000, (us % 1000000) * 1000L};
            nanosleep(&d, NULL);
        }
    }
    long bought = 0;
    int status = 0;
    while (max < 0 || bought < max) {
        double asked = now_ms();
        polylock_result res = polylock_lock_acquire(lock, me, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG);
        if (res != POLYLOCK_OK) { status = 1; break; }
        long long start = section_us();
        if (n == cap) {
            cap *= 2;
            waits = realloc(waits, cap * sizeof *waits);
            sections = realloc(sections, cap * 3 * sizeof *sections);
        }
        waits[n] = now_ms() - asked;
        long long stock = get_int(r, stock_key, 0);
        uint64_t token = 0;
        polylock_lock_fencing_token(lock, me, &token);
        sections[3 * n] = start;
        sections[3 * n + 2] = (long long)token;
        n++;
        if (stock <= 0) {
            sections[3 * n - 2] = section_us();
            polylock_lock_release(lock, me);
            break;
        }
        if ((long long)token <= get_int(r, token_key, 0)) {
            fprintf(stderr, "fencing token %llu is not above the last one: sections out of order\n",
                    (unsigned long long)token);
            status = 1;
            sections[3 * n - 2] = section_us();
            polylock_lock_release(lock, me);
            break;
        }
        struct timespec d = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
        nanosleep(&d, NULL);
        long long sold = get_int(r, sold_key, 0);
        /* The sale, fenced: three SETs that run only if no later holder of the lock wrote. */
        char v_stock[24], v_sold[24], v_token[24];
        snprintf(v_stock, sizeof v_stock, "%lld", stock - 1);
        snprintf(v_sold, sizeof v_sold, "%lld", sold + 1);
        snprintf(v_token, sizeof v_token, "%llu", (unsigned long long)token);
        const char *sale[] = {"SET", stock_key, v_stock, "SET", sold_key, v_sold, "SET", token_key, v_token};
        size_t argcs[] = {3, 3, 3};
        if (polylock_fence_write(fence, token, 3, argcs, sale, NULL, NULL) != POLYLOCK_OK) { status = 1; }
        sections[3 * n - 2] = section_us();
        if (polylock_lock_release(lock, me) != POLYLOCK_OK || status) { status = 1; break; }
        bought++;
    }
    if (status) {
        polylock_last_error_message(detail, sizeof detail);
        fprintf(stderr, "buyer failed: %s\n", detail);
    }
    if (sections_path) {
        FILE *f = fopen(sections_path, "w");
        if (!f) { perror(sections_path); status = 1; }
        for (size_t i = 0; f && i < n; i++)
            fprintf(f, "%lld %lld %lld\n", sections[3 * i], sections[3 * i + 1], sections[3 * i + 2]);
        if (f) fclose(f);
    }
    free(sections);
    qsort(waits, n, sizeof *waits, cmp);
    double p50 = n ? waits[(size_t)((n - 1) * 0.5)] : 0, p99 = n ? waits[(size_t)((n - 1) * 0.99)] : 0;
    printf("{\"purchases\":%ld,\"wait_p50_ms\":%.3f,\"wait_p99_ms\":%.3f}\n", bought, p50, p99);
    free(waits);
    polylock_fence_free(fence);
    polylock_client_free(fence_client);
    polylock_lock_free(lock);
    polylock_client_free(client);
    redisFree(r);
    return status;
}
