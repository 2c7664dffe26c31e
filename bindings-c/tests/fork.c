/* fork() after the parent used a backend, from C: the child connects and locks on every backend, the
 * parent's client is refused in the child (its hold stays the parent's), and a child forked after
 * its parent used ZooKeeper is told at once (POLYLOCK_UNSUPPORTED) that it cannot use ZooKeeper,
 * instead of timing out. Each case runs in a fresh process (this program run again with
 * --fork-case PARENT CHILD), since having used ZooKeeper is a property of the whole process.
 *
 * Built without sanitizers (bindings-c/run-tests.sh): AddressSanitizer's allocator is not
 * fork-safe while other threads allocate (a child deadlocked in it), glibc's malloc is. Ends with
 * "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "polylock.h"

static const char *env_or(const char *name, const char *fallback) {
    const char *v = getenv(name);
    return v ? v : fallback;
}

static const char *backend_url(const char *backend) {
    if (strcmp(backend, "redis") == 0) return env_or("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379");
    if (strcmp(backend, "zookeeper") == 0) return env_or("POLYLOCK_ZK_URL", "zk://127.0.0.1:2181");
    if (strcmp(backend, "etcd") == 0) return env_or("POLYLOCK_ETCD_URL", "etcd://127.0.0.1:2379");
    if (strcmp(backend, "mysql") == 0)
        return env_or("POLYLOCK_MYSQL_URL", "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock");
    return env_or("POLYLOCK_PG_URL", "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock");
}

static void fork_case_name(char *buf, size_t len, const char *backend) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, len, "%sc-fork-%ld-%ld-%d", strcmp(backend, "zookeeper") == 0 ? "/" : "",
             (long)ts.tv_sec, ts.tv_nsec, (int)getpid());
}

/* The parent side of one case: hold a lock on `parent`, fork, let the child use `child`.
 * Exit 0 when every check passed. */
static int fork_case(const char *parent, const char *child) {
    polylock_client *held = NULL;
    polylock_lock *lock = NULL;
    char name[96];
    fork_case_name(name, sizeof name, parent);
    if (polylock_client_connect(backend_url(parent), &held) != POLYLOCK_OK) return 10;
    if (polylock_lock_new(held, name, &lock) != POLYLOCK_OK) return 11;
    uint64_t me = polylock_owner_current_thread(), token = 0, after = 0;
    if (polylock_lock_acquire(lock, me, POLYLOCK_WAIT_FOREVER, POLYLOCK_WATCHDOG) != POLYLOCK_OK) return 12;
    if (polylock_lock_fencing_token(lock, me, &token) != POLYLOCK_OK) return 13;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        polylock_lock *theirs = NULL;
        /* The parent's client is the parent's. */
        if (polylock_lock_new(held, name, &theirs) != POLYLOCK_INVALID_STATE) _exit(20);
        polylock_client *c = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        polylock_result r = polylock_client_connect(backend_url(child), &c);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (strcmp(parent, "zookeeper") == 0 && strcmp(child, "zookeeper") == 0) {
            _exit(r == POLYLOCK_UNSUPPORTED && took < 5.0 ? 0 : 21); /* refused, not timed out */
        }
        if (r != POLYLOCK_OK || took > 5.0) _exit(22);
        polylock_lock *l = NULL;
        char mine[96];
        fork_case_name(mine, sizeof mine, child);
        uint64_t o = polylock_owner_current_thread(), t = 0;
        if (polylock_lock_new(c, mine, &l) != POLYLOCK_OK) _exit(23);
        if (polylock_lock_acquire(l, o, 5000, POLYLOCK_WATCHDOG) != POLYLOCK_OK) _exit(24);
        if (polylock_lock_fencing_token(l, o, &t) != POLYLOCK_OK || t == 0) _exit(25);
        if (polylock_lock_release(l, o) != POLYLOCK_OK) _exit(26);
        polylock_lock_free(l);
        polylock_client_close(c);
        polylock_client_free(c);
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return 30;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    /* The child changed nothing of the parent's hold. */
    if (polylock_lock_fencing_token(lock, me, &after) != POLYLOCK_OK || after != token) return 31;
    if (polylock_lock_release(lock, me) != POLYLOCK_OK) return 32;
    polylock_lock_free(lock);
    polylock_client_free(held);
    return code;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--fork-case") == 0) {
        return fork_case(argv[2], argv[3]);
    }
    static const char *backends[] = {"redis", "zookeeper", "mysql", "postgres", "etcd"};
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        perror("readlink /proc/self/exe");
        return 1;
    }
    self[n] = 0;
    int passed = 0, failed = 0;
    for (size_t p = 0; p < 5; p++) {
        for (size_t c = 0; c < 5; c++) {
            pid_t pid = fork();
            if (pid == 0) {
                execl(self, self, "--fork-case", backends[p], backends[c], (char *)NULL);
                _exit(127);
            }
            int status = 0;
            waitpid(pid, &status, 0);
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            printf("fork case: parent %s, child %s ... %s (exit %d)\n", backends[p], backends[c],
                   code == 0 ? "ok" : "FAILED", code);
            if (code == 0) passed++; else failed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

