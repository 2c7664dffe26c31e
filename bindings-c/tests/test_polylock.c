/* The C behaviour suite of polylock, against real Redis, ZooKeeper, MariaDB and PostgreSQL servers.
 * Built with -fsanitize=address,undefined by bindings-c/run-tests.sh; ends with "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "polylock.h"

static int passed, failed, current_failed;
static const char *current;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            char detail_[512];                                                             \
            polylock_last_error_message(detail_, sizeof detail_);                          \
            fprintf(stderr, "  FAIL %s:%d in %s: %s (last error: %s)\n", __FILE__, __LINE__, \
                    current, #cond, detail_);                                              \
            current_failed = 1;                                                            \
        }                                                                                  \
    } while (0)

#define RUN(test)                                      \
    do {                                               \
        current = #test;                               \
        current_failed = 0;                            \
        test();                                        \
        if (current_failed) {                          \
            failed++;                                  \
            printf("test %s ... FAILED\n", #test);     \
        } else {                                       \
            passed++;                                  \
            printf("test %s ... ok\n", #test);         \
        }                                              \
    } while (0)

static const char *redis_url(void) {
    const char *u = getenv("POLYLOCK_REDIS_URL");
    return u ? u : "redis://127.0.0.1:6379";
}

static const char *zk_url(void) {
    const char *u = getenv("POLYLOCK_ZK_URL");
    return u ? u : "zk://127.0.0.1:2181";
}

static const char *etcd_url(void) {
    const char *u = getenv("POLYLOCK_ETCD_URL");
    return u ? u : "etcd://127.0.0.1:2379";
}

static void unique(char *buf, size_t len, const char *prefix) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, len, "%s-%ld-%ld-%d", prefix, (long)ts.tv_sec, ts.tv_nsec, rand());
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static polylock_client *connect_redis(void) {
    polylock_client *c = NULL;
    polylock_result r = polylock_client_connect(redis_url(), &c);
    CHECK(r == POLYLOCK_OK && c != NULL);
    return c;
}

static void test_version_matches_header_and_cargo(void) {
    CHECK(strcmp(polylock_version(), POLYLOCK_VERSION) == 0);
    CHECK(strcmp(POLYLOCK_VERSION, CARGO_VERSION) == 0);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", POLYLOCK_VERSION_MAJOR, POLYLOCK_VERSION_MINOR, POLYLOCK_VERSION_PATCH);
    CHECK(strcmp(v, CARGO_VERSION) == 0);
}

static void test_result_messages(void) {
    char buf[128];
    for (polylock_result r = POLYLOCK_OK; r <= POLYLOCK_STALE_TOKEN; r++) {
        size_t n = polylock_result_message(r, buf, sizeof buf);
        CHECK(n > 0 && strlen(buf) == n);
    }
    CHECK(polylock_result_message(9999, buf, sizeof buf) > 0);
    size_t full = polylock_result_message(POLYLOCK_TIMEOUT, NULL, 0);
    CHECK(full > 8);
    char small[5];
    CHECK(polylock_result_message(POLYLOCK_TIMEOUT, small, sizeof small) == full);
    CHECK(strlen(small) == 4);
}

static void test_every_null_argument(void) {
    polylock_client *c = NULL;
    polylock_lock *l = NULL;
    uint32_t n;
    bool b;
    uint64_t t;
    int64_t ms;
    CHECK(polylock_client_connect(NULL, &c) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_client_connect(redis_url(), NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_client_connect_with(NULL, NULL, &c) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_client_close(NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_new(NULL, "x", &l) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_mutex_new(NULL, "/x", &l) == POLYLOCK_NULL_PARAMETER);
    c = connect_redis();
    CHECK(polylock_lock_new(c, NULL, &l) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_new(c, "x", NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_acquire(NULL, 1, 0, -1) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_release(NULL, 1) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_hold_count(NULL, 1, &n) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_is_locked(NULL, &b) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_fencing_token(NULL, 1, &t) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_remaining_lease_ms(NULL, &ms) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_force_unlock(NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_on_lost(NULL, NULL, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_new(c, "null-out", &l) == POLYLOCK_OK);
    CHECK(polylock_lock_hold_count(l, 1, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_is_locked(l, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_fencing_token(l, 1, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_remaining_lease_ms(l, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_on_lost(l, NULL, NULL) == POLYLOCK_NULL_PARAMETER);
    char buf[64];
    CHECK(polylock_last_error_message(buf, sizeof buf) > 0);
    polylock_lock_free(l);
    polylock_client_free(c);
    polylock_client_free(NULL);
    polylock_lock_free(NULL);
}

static void test_bad_input(void) {
    polylock_client *c = connect_redis();
    polylock_lock *l = NULL;
    CHECK(polylock_lock_new(c, "", &l) == POLYLOCK_INVALID_ARGUMENT && l == NULL);
    CHECK(polylock_lock_new(c, "\xff\xfe", &l) == POLYLOCK_INVALID_ARGUMENT);
    char *big = malloc(65538);
    memset(big, 'x', 65537);
    big[65537] = 0;
    CHECK(polylock_lock_new(c, big, &l) == POLYLOCK_INVALID_ARGUMENT);
    big[65536] = 0;
    CHECK(polylock_lock_new(c, big, &l) == POLYLOCK_OK);
    polylock_lock_free(l);
    free(big);
    char name[64];
    unique(name, sizeof name, "c-bad");
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 1, -2, -1) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_lock_acquire(l, 1, 0, 0) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_lock_acquire(l, 1, 0, -5) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_lock_acquire(l, 1, INT64_MAX, -1) == POLYLOCK_INVALID_ARGUMENT);
    char detail[256];
    polylock_last_error_message(detail, sizeof detail);
    CHECK(strlen(detail) > 0);
    bool locked = true;
    CHECK(polylock_lock_is_locked(l, &locked) == POLYLOCK_OK && !locked);
    CHECK(polylock_last_error_message(detail, sizeof detail) == 0);
    polylock_lock_free(l);
    polylock_client *bad = NULL;
    CHECK(polylock_client_connect("http://127.0.0.1:6379", &bad) == POLYLOCK_INVALID_ARGUMENT && bad == NULL);
    CHECK(polylock_client_connect("\xff", &bad) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_client_connect("redis://127.0.0.1:1", &bad) == POLYLOCK_CONNECTION);
    polylock_options o = {.watchdog_timeout_ms = 5};
    CHECK(polylock_client_connect_with(redis_url(), &o, &bad) == POLYLOCK_INVALID_ARGUMENT);
    polylock_client_free(c);
}

static void test_reentrancy_ownership_and_tokens(void) {
    polylock_client *c = connect_redis();
    polylock_lock *l = NULL;
    char name[64];
    unique(name, sizeof name, "c-reentry");
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    uint64_t me = polylock_owner_current_thread(), other = me + 1000000;
    CHECK(polylock_owner_current_thread() == me);
    CHECK(polylock_lock_acquire(l, me, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    uint64_t t1 = 0, t2 = 0;
    CHECK(polylock_lock_fencing_token(l, me, &t1) == POLYLOCK_OK && t1 > 0);
    CHECK(polylock_lock_acquire(l, me, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    uint32_t n = 0;
    CHECK(polylock_lock_hold_count(l, me, &n) == POLYLOCK_OK && n == 2);
    CHECK(polylock_lock_acquire(l, other, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_TIMEOUT);
    CHECK(polylock_lock_acquire(l, other, 150, POLYLOCK_WATCHDOG) == POLYLOCK_TIMEOUT);
    CHECK(polylock_lock_release(l, other) == POLYLOCK_NOT_OWNER);
    CHECK(polylock_lock_fencing_token(l, other, &t2) == POLYLOCK_NOT_OWNER);
    int64_t ttl = 0;
    CHECK(polylock_lock_remaining_lease_ms(l, &ttl) == POLYLOCK_OK && ttl > 20000);
    CHECK(polylock_lock_release(l, me) == POLYLOCK_OK);
    bool locked = false;
    CHECK(polylock_lock_is_locked(l, &locked) == POLYLOCK_OK && locked);
    CHECK(polylock_lock_release(l, me) == POLYLOCK_OK);
    CHECK(polylock_lock_is_locked(l, &locked) == POLYLOCK_OK && !locked);
    CHECK(polylock_lock_release(l, me) == POLYLOCK_NOT_OWNER);
    CHECK(polylock_lock_acquire(l, other, POLYLOCK_NO_WAIT, 5000) == POLYLOCK_OK);
    CHECK(polylock_lock_fencing_token(l, other, &t2) == POLYLOCK_OK && t2 > t1);
    CHECK(polylock_lock_remaining_lease_ms(l, &ttl) == POLYLOCK_OK && ttl > 0 && ttl <= 5000);
    CHECK(polylock_lock_release(l, other) == POLYLOCK_OK);
    polylock_lock_free(l);
    polylock_client_free(c);
}

struct cross { polylock_lock *lock; polylock_result result; uint64_t owner; };

static void *release_from_other_thread(void *arg) {
    struct cross *x = arg;
    x->owner = polylock_owner_current_thread();
    x->result = polylock_lock_release(x->lock, x->owner);
    return NULL;
}

static void test_another_thread_cannot_release(void) {
    polylock_client *c = connect_redis();
    polylock_lock *l = NULL;
    char name[64];
    unique(name, sizeof name, "c-thread");
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    uint64_t me = polylock_owner_current_thread();
    CHECK(polylock_lock_acquire(l, me, 0, -1) == POLYLOCK_OK);
    struct cross x = {l, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, release_from_other_thread, &x);
    pthread_join(t, NULL);
    CHECK(x.owner != me);
    CHECK(x.result == POLYLOCK_NOT_OWNER);
    CHECK(polylock_lock_release(l, me) == POLYLOCK_OK);
    polylock_lock_free(l);
    polylock_client_free(c);
}

/* One explicit owner acquires from two threads at once: both acquires succeed and end with hold count
 * 2 (the second waits for the first's outcome and re-enters), so one release leaves the lock held
 * and the second frees it. Before the client serialized them, on Redis both ended with count 1 and
 * one release freed the lock in 298 of 300 rounds; on ZooKeeper the second waited behind its own
 * owner's node until it timed out. */
struct same_owner { polylock_lock *lock; uint64_t owner; pthread_barrier_t *go; polylock_result result; };

static void *acquire_as_shared_owner(void *arg) {
    struct same_owner *x = arg;
    pthread_barrier_wait(x->go);
    x->result = polylock_lock_acquire(x->lock, x->owner, 10000, POLYLOCK_WATCHDOG);
    return NULL;
}

static void one_owner_two_threads(const char *url, const char *name, int rounds) {
    polylock_client *c = NULL, *o = NULL;
    CHECK(polylock_client_connect(url, &c) == POLYLOCK_OK);
    CHECK(polylock_client_connect(url, &o) == POLYLOCK_OK);
    if (!c || !o) {
        polylock_client_free(c);
        polylock_client_free(o);
        return;
    }
    polylock_lock *l = NULL, *theirs = NULL;
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    CHECK(polylock_lock_new(o, name, &theirs) == POLYLOCK_OK);
    uint64_t owner = 4242, stranger = 4343;
    int bad = 0;
    for (int round = 0; round < rounds && !bad; round++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        struct same_owner a = {l, owner, &go, -1}, b = {l, owner, &go, -1};
        pthread_t ta, tb;
        pthread_create(&ta, NULL, acquire_as_shared_owner, &a);
        pthread_create(&tb, NULL, acquire_as_shared_owner, &b);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&go);
        uint32_t n = 0;
        bad |= !(a.result == POLYLOCK_OK && b.result == POLYLOCK_OK);
        bad |= !(polylock_lock_hold_count(l, owner, &n) == POLYLOCK_OK && n == 2);
        bad |= polylock_lock_release(l, owner) != POLYLOCK_OK;
        /* Still held after one of two releases: another owner cannot have it. */
        bad |= polylock_lock_acquire(theirs, stranger, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) != POLYLOCK_TIMEOUT;
        bad |= polylock_lock_release(l, owner) != POLYLOCK_OK;
        bad |= polylock_lock_acquire(theirs, stranger, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) != POLYLOCK_OK;
        bad |= polylock_lock_release(theirs, stranger) != POLYLOCK_OK;
        if (bad) {
            fprintf(stderr, "  %s round %d: acquires %u %u, hold count %u\n", url, round, a.result, b.result, n);
        }
    }
    CHECK(!bad);
    polylock_lock_free(l);
    polylock_lock_free(theirs);
    polylock_client_free(c);
    polylock_client_free(o);
}

static void test_one_owner_from_two_threads(void) {
    char name[96];
    unique(name, sizeof name, "c-same-owner");
    one_owner_two_threads(redis_url(), name, 1000);
    char path[128];
    snprintf(path, sizeof path, "/%s", name);
    one_owner_two_threads(zk_url(), path, 1000);
}

static void test_a_lock_keeps_its_freed_client_alive(void) {
    polylock_client *c = connect_redis();
    polylock_lock *l = NULL;
    char name[64];
    unique(name, sizeof name, "c-refcount");
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    polylock_client_free(c); /* the caller's bug, documented: the lock keeps the client alive */
    CHECK(polylock_lock_acquire(l, 1, 0, -1) == POLYLOCK_OK);
    uint32_t n = 0;
    CHECK(polylock_lock_hold_count(l, 1, &n) == POLYLOCK_OK && n == 1);
    CHECK(polylock_lock_release(l, 1) == POLYLOCK_OK);
    polylock_lock_free(l);
}

static void test_use_after_close(void) {
    polylock_client *c = connect_redis();
    polylock_lock *l = NULL;
    char name[64];
    unique(name, sizeof name, "c-close");
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 1, 0, -1) == POLYLOCK_OK);
    CHECK(polylock_client_close(c) == POLYLOCK_OK);
    CHECK(polylock_client_close(c) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 1, 0, -1) == POLYLOCK_INVALID_STATE);
    polylock_lock *l2 = NULL;
    CHECK(polylock_lock_new(c, "other", &l2) == POLYLOCK_INVALID_STATE);
    /* close released the hold: another client sees the lock free */
    polylock_client *c2 = connect_redis();
    polylock_lock *l3 = NULL;
    CHECK(polylock_lock_new(c2, name, &l3) == POLYLOCK_OK);
    bool locked = true;
    CHECK(polylock_lock_is_locked(l3, &locked) == POLYLOCK_OK && !locked);
    polylock_lock_free(l3);
    polylock_client_free(c2);
    polylock_lock_free(l);
    polylock_client_free(c);
}

struct lost_seen {
    pthread_mutex_t mu;
    int calls;
    uint64_t owner;
    uint32_t reason;
    uint32_t reason_queried;
    char name[128];
    polylock_result blocking_inside;
    polylock_lock *lock;
};

static void on_lost(void *userdata, const char *name, uint64_t owner, uint32_t reason) {
    struct lost_seen *s = userdata;
    /* A blocking call from the callback's thread must be refused, not deadlock. */
    polylock_result r = polylock_lock_release(s->lock, owner);
    /* A non-blocking one answers: the hold reads lost, for the same reason. */
    uint32_t queried = 0;
    if (polylock_lock_lost_reason(s->lock, owner, &queried) != POLYLOCK_OK) queried = 99;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    s->owner = owner;
    s->reason = reason;
    s->reason_queried = queried;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->blocking_inside = r;
    pthread_mutex_unlock(&s->mu);
}

static int wait_lost_calls(struct lost_seen *seen, int at_least) {
    int calls = 0;
    for (int i = 0; i < 1000 && calls < at_least; i++) {
        sleep_ms(10);
        pthread_mutex_lock(&seen->mu);
        calls = seen->calls;
        pthread_mutex_unlock(&seen->mu);
    }
    return calls;
}

/* A callback registered after the hold was taken still hears of its loss, with the reason; the
 * remaining lease tells "not held" (-2) from a lease (ms); the client says it is not suspended. */
static void test_late_listener_reason_lease_and_suspended(void) {
    polylock_options o = {.watchdog_timeout_ms = 600};
    polylock_client *c = NULL, *c2 = connect_redis();
    CHECK(polylock_client_connect_with(redis_url(), &o, &c) == POLYLOCK_OK);
    bool suspended = true;
    CHECK(polylock_client_suspended(NULL, &suspended) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_client_suspended(c, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_client_suspended(c, &suspended) == POLYLOCK_OK && !suspended);
    char name[64];
    unique(name, sizeof name, "c-late-lost");
    polylock_lock *l = NULL, *l2 = NULL;
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    CHECK(polylock_lock_new(c2, name, &l2) == POLYLOCK_OK);
    int64_t ms = 0;
    CHECK(polylock_lock_remaining_lease_ms(l, &ms) == POLYLOCK_OK && ms == POLYLOCK_LEASE_NOT_HELD);
    CHECK(polylock_lock_acquire(l, 5, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_remaining_lease_ms(l, &ms) == POLYLOCK_OK && ms > 0 && ms <= 600);
    uint32_t reason = 7;
    CHECK(polylock_lock_lost_reason(l, 5, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_lock_lost_reason(l, 5, &reason) == POLYLOCK_OK && reason == 0);
    struct lost_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER, .lock = l};
    CHECK(polylock_lock_on_lost(l, on_lost, &seen) == POLYLOCK_OK);
    CHECK(polylock_lock_force_unlock(l2) == POLYLOCK_OK);
    CHECK(wait_lost_calls(&seen, 1) == 1);
    pthread_mutex_lock(&seen.mu);
    CHECK(seen.owner == 5);
    CHECK(seen.reason == POLYLOCK_LOST_DELETED);
    CHECK(seen.reason_queried == POLYLOCK_LOST_DELETED);
    pthread_mutex_unlock(&seen.mu);
    CHECK(polylock_lock_lost_reason(l, 5, &reason) == POLYLOCK_OK && reason == POLYLOCK_LOST_DELETED);
    CHECK(polylock_lock_release(l, 5) == POLYLOCK_LOCK_LOST);
    CHECK(polylock_lock_lost_reason(l, 5, &reason) == POLYLOCK_OK && reason == 0);
    /* A client closed while it holds: its callbacks hear CLIENT_CLOSED. */
    CHECK(polylock_lock_acquire(l, 6, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_client_close(c) == POLYLOCK_OK);
    CHECK(wait_lost_calls(&seen, 2) == 2);
    pthread_mutex_lock(&seen.mu);
    CHECK(seen.owner == 6 && seen.reason == POLYLOCK_LOST_CLIENT_CLOSED);
    pthread_mutex_unlock(&seen.mu);
    polylock_lock_free(l2);
    polylock_lock_free(l);
    polylock_client_free(c2);
    polylock_client_free(c);
}

static void test_lost_callback_fires(void) {
    polylock_options o = {.watchdog_timeout_ms = 600};
    polylock_client *c = NULL;
    CHECK(polylock_client_connect_with(redis_url(), &o, &c) == POLYLOCK_OK);
    polylock_lock *l = NULL;
    char name[64];
    unique(name, sizeof name, "c-lost");
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    struct lost_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER, .lock = l};
    CHECK(polylock_lock_on_lost(l, on_lost, &seen) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 42, 0, -1) == POLYLOCK_OK);
    polylock_client *c2 = connect_redis();
    polylock_lock *l2 = NULL;
    CHECK(polylock_lock_new(c2, name, &l2) == POLYLOCK_OK);
    CHECK(polylock_lock_force_unlock(l2) == POLYLOCK_OK);
    int calls = 0;
    for (int i = 0; i < 500 && calls == 0; i++) {
        sleep_ms(10);
        pthread_mutex_lock(&seen.mu);
        calls = seen.calls;
        pthread_mutex_unlock(&seen.mu);
    }
    pthread_mutex_lock(&seen.mu);
    CHECK(seen.calls == 1);
    CHECK(seen.owner == 42);
    CHECK(seen.reason == POLYLOCK_LOST_DELETED);
    CHECK(strcmp(seen.name, name) == 0);
    CHECK(seen.blocking_inside == POLYLOCK_INVALID_STATE);
    pthread_mutex_unlock(&seen.mu);
    CHECK(polylock_lock_release(l, 42) == POLYLOCK_LOCK_LOST);
    CHECK(polylock_lock_release(l, 42) == POLYLOCK_NOT_OWNER);
    polylock_lock_free(l2);
    polylock_client_free(c2);
    polylock_lock_free(l);
    polylock_client_free(c);
}

struct log_seen {
    pthread_mutex_t mu;
    char lock[128];
    char message[256];
    int warnings;
};

static struct log_seen logs = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void on_log(void *user, int level, const char *target, const char *lock,
                   const char *message) {
    struct log_seen *seen = user;
    (void)target;
    pthread_mutex_lock(&seen->mu);
    if (level == POLYLOCK_LOG_WARN && lock != NULL) {
        seen->warnings++;
        snprintf(seen->lock, sizeof seen->lock, "%s", lock);
        snprintf(seen->message, sizeof seen->message, "%s", message);
    }
    pthread_mutex_unlock(&seen->mu);
}

/* The value of the first line of `text` that starts with `series` (-1 if none). */
static double series_value(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ') return atof(p + n + 1);
    }
    return -1;
}

static void test_metrics_text_and_log_callback(void) {
    CHECK(polylock_set_log_callback(NULL, NULL, POLYLOCK_LOG_WARN) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_set_log_callback(on_log, &logs, 9) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_set_log_callback(on_log, &logs, POLYLOCK_LOG_WARN) == POLYLOCK_OK);
    CHECK(polylock_set_log_callback(on_log, &logs, POLYLOCK_LOG_WARN) == POLYLOCK_INVALID_STATE);

    char url[256], name[64];
    unique(name, sizeof name, "c-metrics");
    snprintf(url, sizeof url, "%s?metric_names=c-metrics-*", redis_url());
    polylock_client *c = NULL;
    CHECK(polylock_client_connect(url, &c) == POLYLOCK_OK);
    polylock_lock *l = NULL;
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 1, 0, -1) == POLYLOCK_OK);
    uint64_t token = 0;
    CHECK(polylock_lock_fencing_token(l, 1, &token) == POLYLOCK_OK);

    /* The size first, as snprintf tells it; then the text. */
    size_t need = polylock_client_metrics(c, NULL, 0);
    CHECK(need > 0);
    char *text = malloc(need + 1);
    CHECK(polylock_client_metrics(c, text, need + 1) == need);
    CHECK(strlen(text) == need);
    CHECK(series_value(text, "polylock_holds{kind=\"lock\",backend=\"redis\"}") == 1);
    CHECK(series_value(text, "polylock_acquire_wait_seconds_count{kind=\"lock\",backend=\"redis\",outcome=\"acquired\"}") == 1);
    char series[256];
    snprintf(series, sizeof series,
             "polylock_name_fencing_token{name=\"%s\",kind=\"lock\",backend=\"redis\"}", name);
    CHECK(series_value(text, series) == (double)token);
    free(text);

    /* Another client takes nothing: a failed try is not_acquired; then the lock is lost. */
    polylock_client *c2 = connect_redis();
    polylock_lock *l2 = NULL;
    CHECK(polylock_lock_new(c2, name, &l2) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l2, 2, 0, -1) == POLYLOCK_TIMEOUT);
    char small[64];
    size_t full = polylock_client_metrics(c2, small, sizeof small);
    CHECK(full > sizeof small && strlen(small) == sizeof small - 1); /* cut, NUL-terminated */
    text = malloc(full + 1);
    polylock_client_metrics(c2, text, full + 1);
    CHECK(series_value(text, "polylock_acquire_wait_seconds_count{kind=\"lock\",backend=\"redis\",outcome=\"not_acquired\"}") == 1);
    free(text);
    CHECK(polylock_lock_force_unlock(l2) == POLYLOCK_OK);
    int warnings = 0;
    for (int i = 0; i < 1000 && warnings == 0; i++) {
        sleep_ms(20);
        /* The watchdog notices at its next renewal; a re-entry asks the server at once. */
        if (i == 5) polylock_lock_acquire(l, 1, 0, -1);
        pthread_mutex_lock(&logs.mu);
        warnings = logs.warnings;
        pthread_mutex_unlock(&logs.mu);
    }
    pthread_mutex_lock(&logs.mu);
    CHECK(logs.warnings >= 1);
    CHECK(strcmp(logs.lock, name) == 0);
    CHECK(strstr(logs.message, "lost") != NULL);
    pthread_mutex_unlock(&logs.mu);

    /* The process's text adds up both clients. */
    size_t all = polylock_metrics(NULL, 0);
    text = malloc(all + 1);
    CHECK(polylock_metrics(text, all + 1) == all);
    CHECK(series_value(text, "polylock_losses_total{kind=\"lock\",backend=\"redis\",reason=\"deleted\"}") >= 1);
    free(text);
    CHECK(polylock_client_metrics(NULL, NULL, 0) == 0);
    polylock_lock_free(l2);
    polylock_client_free(c2);
    polylock_lock_free(l);
    polylock_client_free(c);
}

static void test_a_thousand_lock_free_cycles(void) {
    polylock_client *c = connect_redis();
    char name[64];
    unique(name, sizeof name, "c-cycles");
    for (int i = 0; i < 1000; i++) {
        polylock_lock *l = NULL;
        if (polylock_lock_new(c, name, &l) != POLYLOCK_OK) {
            CHECK(0);
            break;
        }
        if (i % 10 == 0) {
            CHECK(polylock_lock_acquire(l, 7, 0, -1) == POLYLOCK_OK);
            CHECK(polylock_lock_release(l, 7) == POLYLOCK_OK);
        }
        polylock_lock_free(l);
    }
    polylock_client_free(c);
}

/* etcd (etcd's own lock format): re-entry per owner, another owner of the client is excluded, a
 * lease is unsupported. */
static void test_etcd(void) {
    polylock_client *e = NULL;
    CHECK(polylock_client_connect(etcd_url(), &e) == POLYLOCK_OK);
    if (!e) return;
    char name[96], id[64];
    unique(id, sizeof id, "c");
    snprintf(name, sizeof name, "polylock-c-test/%s", id);
    polylock_lock *l = NULL;
    CHECK(polylock_lock_new(e, name, &l) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 1, 0, 1000) == POLYLOCK_UNSUPPORTED);
    CHECK(polylock_lock_acquire(l, 1, 0, -1) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 1, 0, -1) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 2, 100, -1) == POLYLOCK_TIMEOUT);
    uint32_t n = 0;
    CHECK(polylock_lock_hold_count(l, 1, &n) == POLYLOCK_OK && n == 2);
    CHECK(polylock_lock_release(l, 1) == POLYLOCK_OK);
    CHECK(polylock_lock_release(l, 1) == POLYLOCK_OK);
    bool locked = true;
    CHECK(polylock_lock_is_locked(l, &locked) == POLYLOCK_OK && !locked);
    CHECK(polylock_lock_acquire(l, 2, 0, -1) == POLYLOCK_OK);
    CHECK(polylock_lock_release(l, 2) == POLYLOCK_OK);
    polylock_lock_free(l);
    polylock_client_free(e);
}

static void test_zookeeper(void) {
    polylock_client *z = NULL;
    CHECK(polylock_client_connect(zk_url(), &z) == POLYLOCK_OK);
    if (!z) return;
    polylock_lock *l = NULL;
    CHECK(polylock_lock_new(z, "relative", &l) == POLYLOCK_INVALID_ARGUMENT);
    char path[96], name[64];
    unique(name, sizeof name, "c");
    snprintf(path, sizeof path, "/polylock-c-test/%s", name);
    CHECK(polylock_lock_new(z, path, &l) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 1, 0, 1000) == POLYLOCK_UNSUPPORTED);
    CHECK(polylock_lock_acquire(l, 1, 0, -1) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 1, 0, -1) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 2, 100, -1) == POLYLOCK_TIMEOUT);
    uint32_t n = 0;
    CHECK(polylock_lock_hold_count(l, 1, &n) == POLYLOCK_OK && n == 2);
    CHECK(polylock_lock_release(l, 1) == POLYLOCK_OK);
    CHECK(polylock_lock_release(l, 1) == POLYLOCK_OK);
    bool locked = true;
    CHECK(polylock_lock_is_locked(l, &locked) == POLYLOCK_OK && !locked);
    polylock_lock_free(l);
    polylock_lock *m = NULL;
    CHECK(polylock_mutex_new(z, path, &m) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(m, 1, 0, -1) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(m, 1, 0, -1) == POLYLOCK_TIMEOUT); /* not reentrant */
    CHECK(polylock_lock_release(m, 2) == POLYLOCK_OK);              /* any owner of the client */
    polylock_lock_free(m);
    polylock_client_free(z);
    polylock_client *r = connect_redis();
    CHECK(polylock_mutex_new(r, "x", &m) == POLYLOCK_UNSUPPORTED);
    polylock_client_free(r);
}

/* ---- the read-write lock ---------------------------------------------------------------- */

static polylock_lock *rw_half(polylock_client *c, const char *name, uint32_t mode) {
    polylock_lock *l = NULL;
    CHECK(polylock_client_read_write_lock(c, name, mode, &l) == POLYLOCK_OK && l != NULL);
    return l;
}

struct rw_shared {
    const char *name;
    polylock_client *clients[2];
    atomic_int readers_in, writers_in, most_readers, overlaps;
    long counter; /* only writers touch it, non-atomically: exact only under exclusion */
    polylock_result error;
};

struct rw_worker { struct rw_shared *s; int index; bool writer; };

static void *rw_work(void *arg) {
    struct rw_worker *w = arg;
    struct rw_shared *s = w->s;
    polylock_lock *l = NULL;
    if (polylock_client_read_write_lock(s->clients[w->index % 2], s->name,
                                        w->writer ? POLYLOCK_WRITE : POLYLOCK_READ, &l) != POLYLOCK_OK) {
        s->error = POLYLOCK_INTERNAL;
        return NULL;
    }
    uint64_t me = polylock_owner_current_thread();
    for (int i = 0; i < 20; i++) {
        polylock_result r = polylock_lock_acquire(l, me, 30000, POLYLOCK_WATCHDOG);
        if (r != POLYLOCK_OK) {
            s->error = r;
            break;
        }
        if (w->writer) {
            if (atomic_fetch_add(&s->writers_in, 1) != 0 || atomic_load(&s->readers_in) != 0)
                atomic_fetch_add(&s->overlaps, 1);
            long v = s->counter;
            sleep_ms(2);
            s->counter = v + 1;
            atomic_fetch_sub(&s->writers_in, 1);
        } else {
            int n = atomic_fetch_add(&s->readers_in, 1) + 1;
            int most = atomic_load(&s->most_readers);
            while (n > most && !atomic_compare_exchange_weak(&s->most_readers, &most, n)) {
            }
            if (atomic_load(&s->writers_in) != 0) atomic_fetch_add(&s->overlaps, 1);
            sleep_ms(3);
            atomic_fetch_sub(&s->readers_in, 1);
        }
        r = polylock_lock_release(l, me);
        if (r != POLYLOCK_OK) {
            s->error = r;
            break;
        }
    }
    polylock_lock_free(l);
    return NULL;
}

/* 4 reader threads and 2 writer threads over two clients: writers alone, the counter exact. */
static void rw_counter_exact(const char *url, const char *name) {
    struct rw_shared s = {.name = name};
    CHECK(polylock_client_connect(url, &s.clients[0]) == POLYLOCK_OK);
    CHECK(polylock_client_connect(url, &s.clients[1]) == POLYLOCK_OK);
    pthread_t t[6];
    struct rw_worker w[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (struct rw_worker){&s, i, i < 2};
        pthread_create(&t[i], NULL, rw_work, &w[i]);
    }
    for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
    CHECK(s.error == POLYLOCK_OK);
    CHECK(atomic_load(&s.overlaps) == 0);
    CHECK(s.counter == 40);
    CHECK(atomic_load(&s.most_readers) >= 2);
    polylock_client_free(s.clients[0]);
    polylock_client_free(s.clients[1]);
}

/* Readers share, a writer waits for them, downgrade, and the upgrade refused at once. */
static void rw_semantics(const char *url, const char *name) {
    polylock_client *c = NULL;
    CHECK(polylock_client_connect(url, &c) == POLYLOCK_OK);
    if (!c) return;
    polylock_lock *bad = NULL;
    CHECK(polylock_client_read_write_lock(c, name, 0, &bad) == POLYLOCK_INVALID_ARGUMENT && bad == NULL);
    CHECK(polylock_client_read_write_lock(c, name, POLYLOCK_READ | POLYLOCK_WRITE, &bad) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_client_read_write_lock(NULL, name, POLYLOCK_READ, &bad) == POLYLOCK_NULL_PARAMETER);
    polylock_lock *r = rw_half(c, name, POLYLOCK_READ), *w = rw_half(c, name, POLYLOCK_WRITE);
    CHECK(polylock_lock_acquire(r, 1, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(r, 2, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(r, 2, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    uint32_t n = 0;
    CHECK(polylock_lock_hold_count(r, 2, &n) == POLYLOCK_OK && n == 2);
    bool locked = false;
    CHECK(polylock_lock_is_locked(r, &locked) == POLYLOCK_OK && locked);
    CHECK(polylock_lock_is_locked(w, &locked) == POLYLOCK_OK && !locked);
    CHECK(polylock_lock_acquire(w, 3, 150, POLYLOCK_WATCHDOG) == POLYLOCK_TIMEOUT);
    /* An upgrade is refused at once, even with an endless wait. */
    CHECK(polylock_lock_acquire(w, 1, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG) == POLYLOCK_UPGRADE_NOT_SUPPORTED);
    char detail[256];
    polylock_last_error_message(detail, sizeof detail);
    CHECK(strstr(detail, "read lock") != NULL);
    CHECK(polylock_lock_release(r, 1) == POLYLOCK_OK);
    CHECK(polylock_lock_release(r, 2) == POLYLOCK_OK);
    CHECK(polylock_lock_release(r, 2) == POLYLOCK_OK);
    CHECK(polylock_lock_release(r, 2) == POLYLOCK_NOT_OWNER);
    /* Downgrade: write, read, release the write; others may read now, not write. */
    CHECK(polylock_lock_acquire(w, 3, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    uint64_t wt = 0, rt = 0;
    CHECK(polylock_lock_fencing_token(w, 3, &wt) == POLYLOCK_OK && wt > 0);
    CHECK(polylock_lock_acquire(r, 4, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_TIMEOUT);
    CHECK(polylock_lock_acquire(r, 3, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_fencing_token(r, 3, &rt) == POLYLOCK_OK && rt >= wt);
    CHECK(polylock_lock_release(w, 3) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(r, 4, 2000, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(w, 5, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_TIMEOUT);
    CHECK(polylock_lock_release(r, 4) == POLYLOCK_OK);
    CHECK(polylock_lock_release(r, 3) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(w, 5, 2000, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_release(w, 5) == POLYLOCK_OK);
    CHECK(polylock_lock_is_locked(w, &locked) == POLYLOCK_OK && !locked);
    polylock_lock_free(r);
    polylock_lock_free(w);
    polylock_client_free(c);
}

static void test_read_write_lock_on_redis(void) {
    char name[64];
    unique(name, sizeof name, "c-rw");
    rw_semantics(redis_url(), name);
    unique(name, sizeof name, "c-rw-counter");
    rw_counter_exact(redis_url(), name);
}

static void test_read_write_lock_on_zookeeper(void) {
    char name[64], path[96];
    unique(name, sizeof name, "rw");
    snprintf(path, sizeof path, "/polylock-c-test/%s", name);
    rw_semantics(zk_url(), path);
    unique(name, sizeof name, "rw-counter");
    snprintf(path, sizeof path, "/polylock-c-test/%s", name);
    rw_counter_exact(zk_url(), path);
}

/* A read hold outlives its 600 ms lease by the watchdog; force-unlocked elsewhere, it is lost and
 * the lock handle's callback hears it. */
static void test_read_hold_watchdog_and_lost_signal(void) {
    polylock_options o = {.watchdog_timeout_ms = 600};
    polylock_client *c = NULL, *c2 = connect_redis();
    CHECK(polylock_client_connect_with(redis_url(), &o, &c) == POLYLOCK_OK);
    char name[64];
    unique(name, sizeof name, "c-rw-lost");
    polylock_lock *r = rw_half(c, name, POLYLOCK_READ);
    struct lost_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER, .lock = r};
    CHECK(polylock_lock_on_lost(r, on_lost, &seen) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(r, 9, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    sleep_ms(1900);
    polylock_lock *w2 = rw_half(c2, name, POLYLOCK_WRITE);
    CHECK(polylock_lock_acquire(w2, 1, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_TIMEOUT);
    polylock_lock *r2 = rw_half(c2, name, POLYLOCK_READ);
    CHECK(polylock_lock_force_unlock(r2) == POLYLOCK_OK);
    int calls = 0;
    for (int i = 0; i < 500 && calls == 0; i++) {
        sleep_ms(10);
        pthread_mutex_lock(&seen.mu);
        calls = seen.calls;
        pthread_mutex_unlock(&seen.mu);
    }
    CHECK(calls == 1);
    CHECK(polylock_lock_release(r, 9) == POLYLOCK_LOCK_LOST);
    polylock_lock_free(r2);
    polylock_lock_free(w2);
    polylock_lock_free(r);
    polylock_client_free(c2);
    polylock_client_free(c);
}

/* ---- semaphores and the latch ----------------------------------------------------------- */

struct sem_shared {
    const char *url, *name;
    atomic_int inside, most;
    polylock_result error;
};

static void *sem_work(void *arg) {
    struct sem_shared *s = arg;
    polylock_client *c = NULL;
    polylock_semaphore *sem = NULL;
    if (polylock_client_connect(s->url, &c) != POLYLOCK_OK || polylock_semaphore_new(c, s->name, &sem) != POLYLOCK_OK) {
        s->error = POLYLOCK_INTERNAL;
        polylock_client_free(c);
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        polylock_result r = polylock_semaphore_acquire(sem, 1, 30000);
        if (r != POLYLOCK_OK) {
            s->error = r;
            break;
        }
        int n = atomic_fetch_add(&s->inside, 1) + 1;
        int most = atomic_load(&s->most);
        while (n > most && !atomic_compare_exchange_weak(&s->most, &most, n)) {
        }
        /* Until all 3 permits have been seen held at once, a holder stays up to 2 s for the others
         * to come in: a slow connect or acquire (a ZooKeeper semaphore takes several round trips under
         * the sanitizers) must not pass for a semaphore that admits fewer than its permits. */
        for (int waited = 0; waited < 2000 && atomic_load(&s->most) < 3; waited++) sleep_ms(1);
        sleep_ms(10);
        atomic_fetch_sub(&s->inside, 1);
        r = polylock_semaphore_release(sem, 1);
        if (r != POLYLOCK_OK) {
            s->error = r;
            break;
        }
    }
    polylock_semaphore_free(sem);
    polylock_client_free(c);
    return NULL;
}

struct latch_wait { polylock_latch *latch; polylock_result result; };

static void *latch_waiter(void *arg) {
    struct latch_wait *w = arg;
    w->result = polylock_latch_wait(w->latch, 10000);
    return NULL;
}

/* N permits and 16 threads: exactly N inside at the busiest; timeouts, bad input, the latch. */
static void semaphore_and_latch(const char *url, const char *name, const char *latch_name) {
    polylock_client *c = NULL;
    CHECK(polylock_client_connect(url, &c) == POLYLOCK_OK);
    if (!c) return;
    polylock_semaphore *sem = NULL;
    CHECK(polylock_semaphore_new(c, name, &sem) == POLYLOCK_OK);
    bool set = false;
    CHECK(polylock_semaphore_try_set_permits(sem, 3, &set) == POLYLOCK_OK && set);
    CHECK(polylock_semaphore_try_set_permits(sem, 7, &set) == POLYLOCK_OK && !set);
    struct sem_shared sh = {.url = url, .name = name};
    pthread_t t[16];
    for (int i = 0; i < 16; i++) pthread_create(&t[i], NULL, sem_work, &sh);
    for (int i = 0; i < 16; i++) pthread_join(t[i], NULL);
    CHECK(sh.error == POLYLOCK_OK);
    CHECK(atomic_load(&sh.most) == 3);
    int64_t n = -1;
    CHECK(polylock_semaphore_available(sem, &n) == POLYLOCK_OK && n == 3);
    CHECK(polylock_semaphore_acquire(sem, 0, 0) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_semaphore_release(sem, 0) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_semaphore_acquire(sem, 3, POLYLOCK_NO_WAIT) == POLYLOCK_OK);
    CHECK(polylock_semaphore_acquire(sem, 1, 150) == POLYLOCK_TIMEOUT);
    CHECK(polylock_semaphore_release(sem, 3) == POLYLOCK_OK);
    CHECK(polylock_semaphore_drain(sem, &n) == POLYLOCK_OK && n == 3);
    CHECK(polylock_semaphore_available(sem, &n) == POLYLOCK_OK && n == 0);
    CHECK(polylock_semaphore_release(sem, 3) == POLYLOCK_OK);
    CHECK(polylock_semaphore_add_permits(sem, -1) == POLYLOCK_OK);
    CHECK(polylock_semaphore_available(sem, &n) == POLYLOCK_OK && n == 2);
    CHECK(polylock_semaphore_available(NULL, &n) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_semaphore_available(sem, NULL) == POLYLOCK_NULL_PARAMETER);
    polylock_semaphore_free(sem);
    polylock_semaphore_free(NULL);

    polylock_latch *latch = NULL;
    CHECK(polylock_latch_new(c, latch_name, &latch) == POLYLOCK_OK);
    CHECK(polylock_latch_try_set_count(latch, 0, &set) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_latch_try_set_count(latch, 2, &set) == POLYLOCK_OK && set);
    CHECK(polylock_latch_wait(latch, 150) == POLYLOCK_TIMEOUT);
    struct latch_wait w[3];
    pthread_t lt[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (struct latch_wait){latch, POLYLOCK_INTERNAL};
        pthread_create(&lt[i], NULL, latch_waiter, &w[i]);
    }
    sleep_ms(100);
    CHECK(polylock_latch_count_down(latch) == POLYLOCK_OK);
    uint64_t count = 0;
    CHECK(polylock_latch_count(latch, &count) == POLYLOCK_OK && count == 1);
    CHECK(polylock_latch_count_down(latch) == POLYLOCK_OK);
    for (int i = 0; i < 3; i++) {
        pthread_join(lt[i], NULL);
        CHECK(w[i].result == POLYLOCK_OK);
    }
    CHECK(polylock_latch_count(latch, &count) == POLYLOCK_OK && count == 0);
    CHECK(polylock_latch_wait(latch, POLYLOCK_NO_WAIT) == POLYLOCK_OK);
    polylock_latch_free(latch);
    polylock_client_free(c);
}

static void test_semaphore_and_latch_on_redis(void) {
    char name[64], latch[64];
    unique(name, sizeof name, "c-sem");
    unique(latch, sizeof latch, "c-latch");
    semaphore_and_latch(redis_url(), name, latch);
}

static void test_semaphore_and_latch_on_zookeeper(void) {
    char a[64], b[64], name[96], latch[96];
    unique(a, sizeof a, "sem");
    unique(b, sizeof b, "latch");
    snprintf(name, sizeof name, "/polylock-c-test/%s", a);
    snprintf(latch, sizeof latch, "/polylock-c-test/%s", b);
    semaphore_and_latch(zk_url(), name, latch);
    polylock_client *z = NULL;
    CHECK(polylock_client_connect(zk_url(), &z) == POLYLOCK_OK);
    polylock_permit_semaphore *ps = NULL;
    CHECK(polylock_permit_semaphore_new(z, name, &ps) == POLYLOCK_UNSUPPORTED && ps == NULL);
    polylock_client_free(z);
}

/* Expiring permits: ids, leases, release once, the watchdog keeps them, unknown ids refused. */
static void test_expiring_permits(void) {
    polylock_options o = {.watchdog_timeout_ms = 600};
    polylock_client *c = NULL;
    CHECK(polylock_client_connect_with(redis_url(), &o, &c) == POLYLOCK_OK);
    if (!c) return;
    char name[64];
    unique(name, sizeof name, "c-permits");
    polylock_permit_semaphore *ps = NULL;
    CHECK(polylock_permit_semaphore_new(c, name, &ps) == POLYLOCK_OK);
    bool set = false;
    CHECK(polylock_permit_semaphore_try_set_permits(ps, 1, &set) == POLYLOCK_OK && set);
    char id[POLYLOCK_PERMIT_ID_LEN];
    char small[8];
    CHECK(polylock_permit_semaphore_acquire(ps, 0, -1, small, sizeof small) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_permit_semaphore_acquire(ps, 0, -1, NULL, sizeof id) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_permit_semaphore_acquire(ps, 0, -1, id, sizeof id) == POLYLOCK_OK);
    CHECK(strlen(id) == 32);
    sleep_ms(1900); /* three leases: the watchdog renews it */
    char other[POLYLOCK_PERMIT_ID_LEN];
    CHECK(polylock_permit_semaphore_acquire(ps, 0, -1, other, sizeof other) == POLYLOCK_TIMEOUT);
    int64_t n = -1;
    CHECK(polylock_permit_semaphore_available(ps, &n) == POLYLOCK_OK && n == 0);
    CHECK(polylock_permit_semaphore_release(ps, id) == POLYLOCK_OK);
    CHECK(polylock_permit_semaphore_release(ps, id) == POLYLOCK_NOT_OWNER);
    CHECK(polylock_permit_semaphore_release(ps, "not-an-id") == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_permit_semaphore_acquire(ps, 0, 200, id, sizeof id) == POLYLOCK_OK);
    sleep_ms(600);
    CHECK(polylock_permit_semaphore_release(ps, id) != POLYLOCK_OK); /* its lease ran out */
    CHECK(polylock_permit_semaphore_available(ps, &n) == POLYLOCK_OK && n == 1);
    /* A second permit; a taken one given back by try_release, which says whether it was there. */
    CHECK(polylock_permit_semaphore_add_permits(ps, 1) == POLYLOCK_OK);
    CHECK(polylock_permit_semaphore_add_permits(NULL, 1) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_permit_semaphore_available(ps, &n) == POLYLOCK_OK && n == 2);
    CHECK(polylock_permit_semaphore_acquire(ps, 0, -1, id, sizeof id) == POLYLOCK_OK);
    bool was = false;
    CHECK(polylock_permit_semaphore_try_release(ps, id, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_permit_semaphore_try_release(ps, id, &was) == POLYLOCK_OK && was);
    CHECK(polylock_permit_semaphore_try_release(ps, id, &was) == POLYLOCK_OK && !was);
    CHECK(polylock_permit_semaphore_available(ps, &n) == POLYLOCK_OK && n == 2);
    polylock_permit_semaphore_free(ps);
    polylock_permit_semaphore_free(NULL);
    polylock_client_free(c);
}

/* ---- fair lock, multi-lock, RedLock ---- */

struct fair_shared {
    polylock_lock *lock;
    atomic_int next;      /* the position of the next thread to get the lock */
    int order[6];         /* who got it, in the order they got it */
    polylock_result error;
};

struct fair_worker { struct fair_shared *s; int index; };

static void *fair_work(void *arg) {
    struct fair_worker *w = arg;
    uint64_t me = polylock_owner_current_thread();
    polylock_result r = polylock_lock_acquire(w->s->lock, me, 30000, POLYLOCK_WATCHDOG);
    if (r != POLYLOCK_OK) {
        w->s->error = r;
        return NULL;
    }
    w->s->order[atomic_fetch_add(&w->s->next, 1)] = w->index;
    sleep_ms(10);
    r = polylock_lock_release(w->s->lock, me);
    if (r != POLYLOCK_OK) w->s->error = r;
    return NULL;
}

/* Six threads that ask while the lock is held get it in the order they asked. */
static void test_fair_lock_grants_in_order(void) {
    polylock_client *c = connect_redis();
    if (!c) return;
    char name[128];
    unique(name, sizeof name, "c-fair");
    struct fair_shared s = {0};
    CHECK(polylock_client_fair_lock(c, name, &s.lock) == POLYLOCK_OK && s.lock != NULL);
    if (!s.lock) return;
    CHECK(polylock_lock_acquire(s.lock, 1, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    pthread_t t[6];
    struct fair_worker w[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (struct fair_worker){&s, i};
        pthread_create(&t[i], NULL, fair_work, &w[i]);
        sleep_ms(100); /* each has joined the queue before the next asks */
    }
    CHECK(polylock_lock_release(s.lock, 1) == POLYLOCK_OK);
    for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
    CHECK(s.error == POLYLOCK_OK);
    CHECK(atomic_load(&s.next) == 6);
    for (int i = 0; i < 6; i++) CHECK(s.order[i] == i);
    bool locked = true;
    CHECK(polylock_lock_is_locked(s.lock, &locked) == POLYLOCK_OK && !locked);
    polylock_lock_free(s.lock);
    polylock_client_free(c);
}

/* A Redis lock and a ZooKeeper lock together: all or nothing, tokens of members, bad input. */
static void test_multi_lock_all_or_nothing(void) {
    polylock_client *r = connect_redis();
    polylock_client *z = NULL, *other = NULL;
    CHECK(polylock_client_connect(zk_url(), &z) == POLYLOCK_OK);
    CHECK(polylock_client_connect(zk_url(), &other) == POLYLOCK_OK);
    if (!r || !z || !other) return;
    char a_name[128], b_name[160];
    unique(a_name, sizeof a_name, "c-multi");
    snprintf(b_name, sizeof b_name, "/polylock-test/%s", a_name);
    polylock_lock *a = NULL, *b = NULL, *b_other = NULL, *m = NULL;
    CHECK(polylock_lock_new(r, a_name, &a) == POLYLOCK_OK);
    CHECK(polylock_lock_new(z, b_name, &b) == POLYLOCK_OK);
    CHECK(polylock_lock_new(other, b_name, &b_other) == POLYLOCK_OK);
    polylock_lock *members[2] = {b, a};
    CHECK(polylock_multi_lock_new(members, 2, &m) == POLYLOCK_OK && m != NULL);

    uint64_t me = polylock_owner_current_thread();
    CHECK(polylock_lock_acquire(m, me, 5000, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    bool locked = false;
    CHECK(polylock_lock_is_locked(a, &locked) == POLYLOCK_OK && locked);
    uint64_t ta = 0, tb = 0;
    CHECK(polylock_lock_fencing_token(a, me, &ta) == POLYLOCK_OK && ta > 0);
    CHECK(polylock_lock_fencing_token(b, me, &tb) == POLYLOCK_OK && tb > 0);
    CHECK(polylock_lock_acquire(m, me, 0, POLYLOCK_WATCHDOG) == POLYLOCK_OK); /* re-entry */
    CHECK(polylock_lock_release(m, me) == POLYLOCK_OK);
    CHECK(polylock_lock_release(m, me) == POLYLOCK_OK);
    CHECK(polylock_lock_is_locked(a, &locked) == POLYLOCK_OK && !locked);
    CHECK(polylock_lock_release(m, me) == POLYLOCK_NOT_OWNER);

    /* The ZooKeeper member held elsewhere: the wait runs out and the Redis member is given back. */
    CHECK(polylock_lock_acquire(b_other, 7, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(m, me, 300, POLYLOCK_WATCHDOG) == POLYLOCK_TIMEOUT);
    CHECK(polylock_lock_is_locked(a, &locked) == POLYLOCK_OK && !locked);
    CHECK(polylock_lock_release(b_other, 7) == POLYLOCK_OK);

    polylock_lock *bad = NULL;
    CHECK(polylock_multi_lock_new(members, 0, &bad) == POLYLOCK_INVALID_ARGUMENT && bad == NULL);
    polylock_lock *twice[2] = {a, a};
    CHECK(polylock_multi_lock_new(twice, 2, &bad) == POLYLOCK_INVALID_ARGUMENT && bad == NULL);
    polylock_lock *with_null[2] = {a, NULL};
    CHECK(polylock_multi_lock_new(with_null, 2, &bad) == POLYLOCK_NULL_PARAMETER && bad == NULL);
    CHECK(polylock_multi_lock_new(NULL, 2, &bad) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_multi_lock_new(members, 2, NULL) == POLYLOCK_NULL_PARAMETER);

    polylock_lock_free(m);
    polylock_lock_free(a);
    polylock_lock_free(b);
    polylock_lock_free(b_other);
    CHECK(polylock_client_close(z) == POLYLOCK_OK);
    CHECK(polylock_client_close(other) == POLYLOCK_OK);
    polylock_client_free(r);
    polylock_client_free(z);
    polylock_client_free(other);
}

/* The three RedLock masters of scripts/servers.sh (POLYLOCK_REDLOCK_URLS, comma-separated). */
static int redlock_urls(char *buf, size_t len, const char *urls[3]) {
    const char *env = getenv("POLYLOCK_REDLOCK_URLS");
    snprintf(buf, len, "%s",
             env ? env : "redis://127.0.0.1:6381,redis://127.0.0.1:6382,redis://127.0.0.1:6383");
    int n = 0;
    char *save = NULL;
    for (char *u = strtok_r(buf, ",", &save); u && n < 3; u = strtok_r(NULL, ",", &save)) urls[n++] = u;
    return n;
}

struct redlock_shared {
    polylock_client *clients[2];
    const char *name;
    atomic_int inside, overlaps;
    long counter;
    polylock_result error;
};

struct redlock_worker { struct redlock_shared *s; int index; };

static void *redlock_work(void *arg) {
    struct redlock_worker *w = arg;
    struct redlock_shared *s = w->s;
    polylock_lock *l = NULL;
    if (polylock_lock_new(s->clients[w->index % 2], s->name, &l) != POLYLOCK_OK) {
        s->error = POLYLOCK_INTERNAL;
        return NULL;
    }
    uint64_t me = polylock_owner_current_thread();
    for (int i = 0; i < 15; i++) {
        polylock_result r = polylock_lock_acquire(l, me, 30000, POLYLOCK_WATCHDOG);
        if (r != POLYLOCK_OK) {
            s->error = r;
            break;
        }
        if (atomic_fetch_add(&s->inside, 1) != 0) atomic_fetch_add(&s->overlaps, 1);
        long v = s->counter;
        sleep_ms(1);
        s->counter = v + 1;
        atomic_fetch_sub(&s->inside, 1);
        r = polylock_lock_release(l, me);
        if (r != POLYLOCK_OK) {
            s->error = r;
            break;
        }
    }
    polylock_lock_free(l);
    return NULL;
}

static void test_redlock(void) {
    char buf[512];
    const char *urls[3];
    CHECK(redlock_urls(buf, sizeof buf, urls) == 3);
    char name[128];
    unique(name, sizeof name, "c-redlock");
    struct redlock_shared s = {.name = name};
    CHECK(polylock_connect_redlock(urls, 3, &s.clients[0]) == POLYLOCK_OK);
    polylock_options opts = {.watchdog_timeout_ms = 5000};
    CHECK(polylock_connect_redlock_with(urls, 3, &opts, &s.clients[1]) == POLYLOCK_OK);
    if (!s.clients[0] || !s.clients[1]) return;
    pthread_t t[4];
    struct redlock_worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct redlock_worker){&s, i};
        pthread_create(&t[i], NULL, redlock_work, &w[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK(s.error == POLYLOCK_OK);
    CHECK(atomic_load(&s.overlaps) == 0);
    CHECK(s.counter == 60);

    polylock_lock *l = NULL;
    CHECK(polylock_client_fair_lock(s.clients[0], name, &l) == POLYLOCK_UNSUPPORTED && l == NULL);
    polylock_client *bad = NULL;
    CHECK(polylock_connect_redlock(urls, 2, &bad) == POLYLOCK_INVALID_ARGUMENT && bad == NULL);
    const char *dup[3] = {urls[0], urls[1], urls[0]};
    CHECK(polylock_connect_redlock(dup, 3, &bad) == POLYLOCK_INVALID_ARGUMENT && bad == NULL);
    const char *with_null[3] = {urls[0], NULL, urls[2]};
    CHECK(polylock_connect_redlock(with_null, 3, &bad) == POLYLOCK_NULL_PARAMETER && bad == NULL);
    CHECK(polylock_connect_redlock(NULL, 3, &bad) == POLYLOCK_NULL_PARAMETER);
    const char *down[3] = {urls[0], "redis://127.0.0.1:1", "redis://127.0.0.1:2"};
    CHECK(polylock_connect_redlock(down, 3, &bad) == POLYLOCK_CONNECTION && bad == NULL);
    CHECK(polylock_client_close(s.clients[0]) == POLYLOCK_OK);
    CHECK(polylock_client_close(s.clients[1]) == POLYLOCK_OK);
    polylock_client_free(s.clients[0]);
    polylock_client_free(s.clients[1]);
}

/* MySQL/MariaDB (GET_LOCK) and PostgreSQL (advisory locks): exclusion, reentrancy and the lost
 * signal of a killed connection, on the servers of scripts/servers.sh. */
struct sql_worker {
    polylock_lock *lock;
    atomic_int *inside, *overlaps;
    int *counter;
    pthread_mutex_t *mu;
    uint64_t *tokens;
    int *ntokens;
    polylock_result result;
};

static void *sql_work(void *arg) {
    struct sql_worker *w = arg;
    uint64_t me = polylock_owner_current_thread();
    w->result = POLYLOCK_OK;
    for (int i = 0; i < 8; i++) {
        polylock_result r = polylock_lock_acquire(w->lock, me, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG);
        if (r != POLYLOCK_OK) { w->result = r; return NULL; }
        if (atomic_exchange(w->inside, 1)) atomic_fetch_add(w->overlaps, 1);
        uint64_t t = 0;
        polylock_lock_fencing_token(w->lock, me, &t);
        pthread_mutex_lock(w->mu);
        w->tokens[(*w->ntokens)++] = t;
        pthread_mutex_unlock(w->mu);
        int v = *w->counter;
        sleep_ms(1);
        *w->counter = v + 1;
        atomic_store(w->inside, 0);
        r = polylock_lock_release(w->lock, me);
        if (r != POLYLOCK_OK) { w->result = r; return NULL; }
    }
    return NULL;
}

static void sql_case(const char *url) {
    polylock_client *cs[2] = {NULL, NULL};
    CHECK(polylock_client_connect(url, &cs[0]) == POLYLOCK_OK);
    CHECK(polylock_client_connect(url, &cs[1]) == POLYLOCK_OK);
    if (!cs[0] || !cs[1]) return;
    char name[64];
    unique(name, sizeof name, "c-sql");
    /* Exclusion: four threads on two clients, 8 sections each. */
    atomic_int inside = 0, overlaps = 0;
    int counter = 0, ntokens = 0;
    uint64_t tokens[32];
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    struct sql_worker w[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct sql_worker){.inside = &inside, .overlaps = &overlaps, .counter = &counter,
                                   .mu = &mu, .tokens = tokens, .ntokens = &ntokens};
        CHECK(polylock_lock_new(cs[i % 2], name, &w[i].lock) == POLYLOCK_OK);
        pthread_create(&th[i], NULL, sql_work, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].result == POLYLOCK_OK);
        polylock_lock_free(w[i].lock);
    }
    CHECK(atomic_load(&overlaps) == 0);
    CHECK(counter == 32 && ntokens == 32);
    for (int i = 1; i < ntokens; i++) CHECK(tokens[i - 1] < tokens[i]);
    /* Reentrancy: one owner twice, another owner excluded until the last release. */
    polylock_lock *a = NULL, *b = NULL;
    CHECK(polylock_lock_new(cs[0], name, &a) == POLYLOCK_OK);
    CHECK(polylock_lock_new(cs[1], name, &b) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(a, 7, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(a, 7, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    uint32_t n = 0;
    CHECK(polylock_lock_hold_count(a, 7, &n) == POLYLOCK_OK && n == 2);
    CHECK(polylock_lock_acquire(b, 8, 150, POLYLOCK_WATCHDOG) == POLYLOCK_TIMEOUT);
    CHECK(polylock_lock_release(a, 7) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(b, 8, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_TIMEOUT);
    CHECK(polylock_lock_release(a, 7) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(b, 8, POLYLOCK_NO_WAIT, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_release(b, 8) == POLYLOCK_OK);
    CHECK(polylock_lock_release(a, 7) == POLYLOCK_NOT_OWNER);
    polylock_lock_free(a);
    polylock_lock_free(b);
    /* The lost signal: force_unlock kills the holder's connection on the server. */
    polylock_options o = {.watchdog_timeout_ms = 1500};
    polylock_client *c = NULL;
    CHECK(polylock_client_connect_with(url, &o, &c) == POLYLOCK_OK);
    polylock_lock *l = NULL, *l2 = NULL;
    CHECK(polylock_lock_new(c, name, &l) == POLYLOCK_OK);
    struct lost_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER, .lock = l};
    CHECK(polylock_lock_on_lost(l, on_lost, &seen) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(l, 42, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    uint64_t t1 = 0, t2 = 0;
    CHECK(polylock_lock_fencing_token(l, 42, &t1) == POLYLOCK_OK);
    CHECK(polylock_lock_new(cs[1], name, &l2) == POLYLOCK_OK);
    CHECK(polylock_lock_force_unlock(l2) == POLYLOCK_OK);
    int calls = 0, waited = 0;
    for (; waited < 1000 && calls == 0; waited++) {
        sleep_ms(10);
        pthread_mutex_lock(&seen.mu);
        calls = seen.calls;
        pthread_mutex_unlock(&seen.mu);
    }
    CHECK(calls == 1); /* at a renewal (every 0.5 s): never heard in 10 s is the failure */
    CHECK(polylock_lock_release(l, 42) == POLYLOCK_LOCK_LOST);
    CHECK(polylock_lock_acquire(l2, 9, 5000, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_fencing_token(l2, 9, &t2) == POLYLOCK_OK && t2 > t1);
    CHECK(polylock_lock_release(l2, 9) == POLYLOCK_OK);
    polylock_lock_free(l2);
    polylock_lock_free(l);
    polylock_client_free(c);
    polylock_client_free(cs[0]);
    polylock_client_free(cs[1]);
}

static void test_sql_mysql_and_postgres(void) {
    const char *my = getenv("POLYLOCK_MYSQL_URL");
    const char *pg = getenv("POLYLOCK_PG_URL");
    sql_case(my ? my : "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock");
    sql_case(pg ? pg : "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock");
}

/* A leader election on one backend: one leader, the term, a bounded campaign that gives up, the
 * leader as others read it (truncated into a small buffer), changes, resign. */
static void election_on(const char *url, const char *name) {
    polylock_client *a = NULL, *b = NULL;
    CHECK(polylock_client_connect(url, &a) == POLYLOCK_OK);
    CHECK(polylock_client_connect(url, &b) == POLYLOCK_OK);
    polylock_election *ea = NULL, *eb = NULL;
    CHECK(polylock_election_new(a, name, "c-node-a", &ea) == POLYLOCK_OK);
    CHECK(polylock_election_new(b, name, "c-node-b", &eb) == POLYLOCK_OK);
    uint64_t term = 0, term2 = 0, t = 0, changed = 0;
    bool is = false, has = false, was = false;
    char buf[64], small[4];
    size_t n = 0;
    CHECK(polylock_election_campaign(ea, -1, &term) == POLYLOCK_OK && term > 0);
    CHECK(polylock_election_is_leader(ea, &is) == POLYLOCK_OK && is);
    CHECK(polylock_election_campaign(eb, 200, &term2) == POLYLOCK_TIMEOUT);
    CHECK(polylock_election_is_leader(eb, &is) == POLYLOCK_OK && !is);
    CHECK(polylock_election_leader(eb, buf, sizeof buf, &n, &t, &has) == POLYLOCK_OK);
    CHECK(has && strcmp(buf, "c-node-a") == 0 && n == 8 && t == term);
    CHECK(polylock_election_leader(eb, small, sizeof small, &n, NULL, &has) == POLYLOCK_OK);
    CHECK(n == 8 && strcmp(small, "c-n") == 0);
    /* The candidates (the timed-out campaign withdrew b's candidacy): "c-node-a\0". */
    size_t count = 0;
    CHECK(polylock_election_candidates(eb, buf, sizeof buf, &n, &count) == POLYLOCK_OK);
    CHECK(n == 9 && count == 1 && memcmp(buf, "c-node-a", 9) == 0);
    memcpy(small, "xyz", 4);
    CHECK(polylock_election_candidates(eb, small, sizeof small, &n, &count) == POLYLOCK_OK);
    CHECK(n == 9 && count == 1 && strcmp(small, "xyz") == 0); /* too small: left as it was */
    CHECK(polylock_election_candidates(eb, NULL, 0, &n, NULL) == POLYLOCK_OK && n == 9);
    CHECK(polylock_election_candidates(NULL, buf, sizeof buf, &n, &count) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_election_next_change(eb, term, 100, &changed) == POLYLOCK_TIMEOUT);
    CHECK(polylock_election_resign(ea, &was) == POLYLOCK_OK && was);
    CHECK(polylock_election_resign(ea, &was) == POLYLOCK_OK && !was);
    CHECK(polylock_election_next_change(eb, term, 5000, &changed) == POLYLOCK_OK && changed == 0);
    CHECK(polylock_election_leader(eb, buf, sizeof buf, &n, &t, &has) == POLYLOCK_OK && !has && n == 0);
    CHECK(polylock_election_campaign(eb, 5000, &term2) == POLYLOCK_OK && term2 > term);
    CHECK(polylock_election_leader(ea, buf, sizeof buf, NULL, &t, &has) == POLYLOCK_OK);
    CHECK(has && strcmp(buf, "c-node-b") == 0 && t == term2);
    CHECK(polylock_election_resign(eb, &was) == POLYLOCK_OK && was);
    polylock_election_free(ea);
    polylock_election_free(eb);
    CHECK(polylock_client_close(a) == POLYLOCK_OK);
    CHECK(polylock_client_close(b) == POLYLOCK_OK);
    polylock_client_free(a);
    polylock_client_free(b);
}

static void test_election(void) {
    char name[128];
    unique(name, sizeof name, "c-election");
    election_on(redis_url(), name);
    election_on(etcd_url(), name);
    unique(name, sizeof name, "/c-election");
    election_on(zk_url(), name);
    /* Bad input: typed results, nothing crashes. */
    polylock_client *c = connect_redis();
    polylock_election *e = NULL;
    CHECK(polylock_election_new(c, "x", "", &e) == POLYLOCK_INVALID_ARGUMENT && e == NULL);
    CHECK(polylock_election_new(c, "x", NULL, &e) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_election_new(c, "", "a", &e) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_election_new(c, "x", "a", NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_election_new(NULL, "x", "a", &e) == POLYLOCK_NULL_PARAMETER);
    uint64_t term = 0;
    CHECK(polylock_election_campaign(NULL, 0, &term) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_election_campaign(NULL, -5, &term) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_election_new(c, "x", "a", &e) == POLYLOCK_OK);
    CHECK(polylock_election_campaign(e, -5, &term) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_election_next_change(e, 0, -2, &term) == POLYLOCK_INVALID_ARGUMENT);
    bool is = true;
    CHECK(polylock_election_is_leader(e, &is) == POLYLOCK_OK && !is);
    CHECK(polylock_election_is_leader(e, NULL) == POLYLOCK_NULL_PARAMETER);
    polylock_election_free(e);
    polylock_election_free(NULL);
    CHECK(polylock_client_close(c) == POLYLOCK_OK);
    polylock_client_free(c);
}

/* ---- fencing at the resource ------------------------------------------------------------ */

/* One fenced write of `n` commands given as NUL-terminated argument lists ending in NULL. */
static polylock_result fenced(polylock_fence *f, uint64_t token, const char *const *const *cmds, size_t n,
                              polylock_reply **out) {
    size_t argcs[8], total = 0;
    const char *argv[32];
    for (size_t i = 0; i < n; i++) {
        argcs[i] = 0;
        for (const char *const *a = cmds[i]; *a; a++) {
            argv[total++] = *a;
            argcs[i]++;
        }
    }
    return polylock_fence_write(f, token, n, argcs, argv, NULL, out);
}

/* A holder's late write under its old token is refused by Redis itself and nothing of it runs;
 * replies come back as a tree; bad input is typed; a fence needs a Redis client. */
static void test_fenced_writes(void) {
    polylock_client *a = connect_redis(), *b = connect_redis();
    char name[64], stock[96], none[96], fence_key[96];
    unique(name, sizeof name, "c-fence");
    snprintf(stock, sizeof stock, "{%s}:stock", name);
    snprintf(none, sizeof none, "{%s}:none", name);
    snprintf(fence_key, sizeof fence_key, "polylock_fence:{%s}", name);
    polylock_lock *la = NULL, *lb = NULL;
    CHECK(polylock_lock_new(a, name, &la) == POLYLOCK_OK);
    CHECK(polylock_lock_new(b, name, &lb) == POLYLOCK_OK);
    uint64_t me = polylock_owner_current_thread(), t1 = 0, t2 = 0, accepted = 0;
    CHECK(polylock_lock_acquire(la, me, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_fencing_token(la, me, &t1) == POLYLOCK_OK && t1 > 0);
    polylock_fence *fa = NULL, *fb = NULL;
    CHECK(polylock_fence_new(a, name, &fa) == POLYLOCK_OK);
    CHECK(polylock_fence_new(b, name, &fb) == POLYLOCK_OK);

    const char *set[] = {"SET", stock, "10", NULL}, *decr[] = {"DECR", stock, NULL}, *get[] = {"GET", none, NULL};
    const char *const *first[] = {set, decr, get};
    polylock_reply *r = NULL;
    CHECK(fenced(fa, t1, first, 3, &r) == POLYLOCK_OK && r != NULL);
    CHECK(polylock_reply_type(r) == POLYLOCK_REPLY_ARRAY && polylock_reply_count(r) == 3);
    size_t len = 0;
    const char *ok = polylock_reply_string(polylock_reply_item(r, 0), &len);
    CHECK(polylock_reply_type(polylock_reply_item(r, 0)) == POLYLOCK_REPLY_STATUS && ok && len == 2 && strcmp(ok, "OK") == 0);
    CHECK(polylock_reply_type(polylock_reply_item(r, 1)) == POLYLOCK_REPLY_INTEGER);
    CHECK(polylock_reply_integer(polylock_reply_item(r, 1)) == 9);
    CHECK(polylock_reply_type(polylock_reply_item(r, 2)) == POLYLOCK_REPLY_NIL);
    CHECK(polylock_reply_item(r, 3) == NULL && polylock_reply_type(NULL) == -1);
    polylock_reply_free(r);
    CHECK(polylock_fence_accepted(fa, &accepted) == POLYLOCK_OK && accepted == t1);

    /* The holder pauses past its lease: here it is force-unlocked, and B takes the lock. */
    CHECK(polylock_lock_force_unlock(la) == POLYLOCK_OK);
    CHECK(polylock_lock_acquire(lb, me, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG) == POLYLOCK_OK);
    CHECK(polylock_lock_fencing_token(lb, me, &t2) == POLYLOCK_OK && t2 > t1);
    const char *const *one[] = {decr};
    CHECK(fenced(fb, t2, one, 1, NULL) == POLYLOCK_OK);
    CHECK(fenced(fb, t2, one, 1, NULL) == POLYLOCK_OK); /* the same token, again */
    CHECK(fenced(fa, t1, one, 1, &r) == POLYLOCK_STALE_TOKEN);
    char msg[256];
    polylock_last_error_message(msg, sizeof msg);
    CHECK(strstr(msg, "already accepted token") != NULL);
    const char *get_stock[] = {"GET", stock, NULL};
    const char *const *look[] = {get_stock};
    r = NULL;
    CHECK(fenced(fb, t2, look, 1, &r) == POLYLOCK_OK);
    const char *left = polylock_reply_string(polylock_reply_item(r, 0), NULL);
    CHECK(left && strcmp(left, "7") == 0); /* nothing of the late write ran */
    polylock_reply_free(r);
    CHECK(polylock_fence_accepted(fb, &accepted) == POLYLOCK_OK && accepted == t2);

    /* Bad input, typed; binary arguments through argvlens. */
    size_t argc1 = 1;
    const char *ping[] = {"PING"};
    CHECK(polylock_fence_write(fb, 0, 1, &argc1, ping, NULL, NULL) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_fence_write(fb, 1, 0, &argc1, ping, NULL, NULL) == POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_fence_write(fb, 1, 1, NULL, ping, NULL, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_fence_write(fb, 1, 1, &argc1, NULL, NULL, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_fence_write(NULL, 1, 1, &argc1, ping, NULL, NULL) == POLYLOCK_NULL_PARAMETER);
    CHECK(polylock_fence_accepted(fb, NULL) == POLYLOCK_NULL_PARAMETER);
    size_t argc3[] = {3, 2};
    char bin[96];
    snprintf(bin, sizeof bin, "{%s}:bin", name);
    const char *argv[] = {"SET", bin, "a\0b", "GET", bin};
    size_t lens[] = {3, strlen(bin), 3, 3, strlen(bin)};
    r = NULL;
    CHECK(polylock_fence_write(fb, t2, 2, argc3, argv, lens, &r) == POLYLOCK_OK);
    const char *got = polylock_reply_string(polylock_reply_item(r, 1), &len);
    CHECK(got && len == 3 && memcmp(got, "a\0b", 3) == 0);
    polylock_reply_free(r);
    const char *del[] = {"DEL", stock, bin, fence_key, NULL};
    const char *const *clean[] = {del};
    CHECK(fenced(fb, t2, clean, 1, NULL) == POLYLOCK_OK);
    CHECK(polylock_lock_release(lb, me) == POLYLOCK_OK);

    polylock_client *zk = NULL;
    polylock_fence *fz = NULL;
    CHECK(polylock_client_connect(zk_url(), &zk) == POLYLOCK_OK);
    CHECK(polylock_fence_new(zk, "/c-fence", &fz) == POLYLOCK_UNSUPPORTED && fz == NULL);
    polylock_client_free(zk);
    polylock_fence_free(fa);
    polylock_fence_free(fb);
    polylock_fence_free(NULL);
    polylock_reply_free(NULL);
    polylock_lock_free(la);
    polylock_lock_free(lb);
    polylock_client_free(a);
    polylock_client_free(b);
}

int main(void) {
    srand((unsigned)time(NULL));
    RUN(test_version_matches_header_and_cargo);
    RUN(test_result_messages);
    RUN(test_every_null_argument);
    RUN(test_bad_input);
    RUN(test_reentrancy_ownership_and_tokens);
    RUN(test_another_thread_cannot_release);
    RUN(test_a_lock_keeps_its_freed_client_alive);
    RUN(test_use_after_close);
    RUN(test_lost_callback_fires);
    RUN(test_metrics_text_and_log_callback);
    RUN(test_late_listener_reason_lease_and_suspended);
    RUN(test_a_thousand_lock_free_cycles);
    RUN(test_zookeeper);
    RUN(test_one_owner_from_two_threads);
    RUN(test_etcd);
    RUN(test_read_write_lock_on_redis);
    RUN(test_read_write_lock_on_zookeeper);
    RUN(test_read_hold_watchdog_and_lost_signal);
    RUN(test_semaphore_and_latch_on_redis);
    RUN(test_semaphore_and_latch_on_zookeeper);
    RUN(test_expiring_permits);
    RUN(test_fair_lock_grants_in_order);
    RUN(test_multi_lock_all_or_nothing);
    RUN(test_redlock);
    RUN(test_sql_mysql_and_postgres);
    RUN(test_election);
    RUN(test_fenced_writes);
    printf("\n%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
