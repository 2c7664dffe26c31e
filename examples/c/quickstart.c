/* polylock from C: lock, work, unlock.
 *   cc -std=c11 -Iinclude examples/c/quickstart.c -Ltarget/debug -lpolylock -o quickstart */
#include <stdio.h>

#include "polylock.h"

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    char detail[256];
    polylock_client *client = NULL;
    polylock_result r = polylock_client_connect(url, &client);
    if (r != POLYLOCK_OK) {
        polylock_last_error_message(detail, sizeof detail);
        fprintf(stderr, "connect: %s\n", detail);
        return 1;
    }
    polylock_lock *lock = NULL;
    const char *name = url[0] == 'z' ? "/quickstart/goods" : "quickstart:goods";
    if (polylock_lock_new(client, name, &lock) == POLYLOCK_OK) {
        uint64_t me = polylock_owner_current_thread();
        r = polylock_lock_acquire(lock, me, 5000 /* wait up to 5 s */, POLYLOCK_WATCHDOG);
        if (r == POLYLOCK_OK) {
            uint64_t token = 0;
            polylock_lock_fencing_token(lock, me, &token);
            printf("holding %s with fencing token %llu\n", name, (unsigned long long)token);
            /* ... the critical section ... */
            r = polylock_lock_release(lock, me);
        } else if (r == POLYLOCK_TIMEOUT) {
            printf("%s is busy\n", name);
        }
        if (r != POLYLOCK_OK && r != POLYLOCK_TIMEOUT) {
            polylock_last_error_message(detail, sizeof detail);
            fprintf(stderr, "lock: %s\n", detail);
        }
        polylock_lock_free(lock);
    }
    polylock_client_free(client);
    return r == POLYLOCK_OK ? 0 : 1;
}
