/* The C runner of polylock's conformance suite (conformance/README.md): runs every scenario of
 * the JSON files of conformance/scenarios/ against the servers of scripts/servers.sh through the C ABI
 * (include/polylock.h, libpolylock), and prints
 * `conformance c: N passed, N failed, N not applicable`.
 *
 *   runner [--scenarios DIR] [--only TEXT] [--jobs N] [--vocabulary] [-v]
 *
 * A C owner is an explicit uint64_t: each actor of a scenario is one. A step marked "bg" runs on a
 * thread of its own until its "join". N instances run at once, on threads of the runner. Built
 * with -Wall -Wextra -Werror under AddressSanitizer by scripts/conformance.sh. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "polylock.h"

#define RUNTIME "c"

/* ---- a small JSON reader -------------------------------------------------------------------- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct json {
    jtype type;
    bool b;
    double num;
    char *str;           /* J_STR, and the key of an object member */
    struct json **items; /* J_ARR, J_OBJ (members carry their key in ->key) */
    size_t n;
    char *key;
} json;

static json *jparse_value(const char **p);

static void jws(const char **p) {
    while (**p == ' ' || **p == '\n' || **p == '\r' || **p == '\t') (*p)++;
}

static char *jparse_string(const char **p) {
    size_t cap = 16, len = 0;
    char *out = malloc(cap);
    (*p)++; /* " */
    while (**p && **p != '"') {
        char c = **p;
        if (c == '\\') {
            (*p)++;
            c = **p;
            if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
            else if (c == 'u') { /* the scenarios use ASCII: keep a '?' */
                *p += 4;
                c = '?';
            }
        }
        if (len + 2 > cap) out = realloc(out, cap *= 2);
        out[len++] = c;
        (*p)++;
    }
    (*p)++; /* " */
    out[len] = 0;
    return out;
}

static json *jnew(jtype t) {
    json *j = calloc(1, sizeof *j);
    j->type = t;
    return j;
}

static void jpush(json *parent, json *item) {
    parent->items = realloc(parent->items, (parent->n + 1) * sizeof *parent->items);
    parent->items[parent->n++] = item;
}

static json *jparse_value(const char **p) {
    jws(p);
    if (**p == '{') {
        json *o = jnew(J_OBJ);
        (*p)++;
        jws(p);
        if (**p == '}') { (*p)++; return o; }
        for (;;) {
            jws(p);
            char *k = jparse_string(p);
            jws(p);
            (*p)++; /* : */
            json *v = jparse_value(p);
            v->key = k;
            jpush(o, v);
            jws(p);
            if (*(*p)++ == '}') return o;
        }
    }
    if (**p == '[') {
        json *a = jnew(J_ARR);
        (*p)++;
        jws(p);
        if (**p == ']') { (*p)++; return a; }
        for (;;) {
            jpush(a, jparse_value(p));
            jws(p);
            if (*(*p)++ == ']') return a;
        }
    }
    if (**p == '"') {
        json *s = jnew(J_STR);
        s->str = jparse_string(p);
        return s;
    }
    if (strncmp(*p, "true", 4) == 0) { *p += 4; json *b = jnew(J_BOOL); b->b = true; return b; }
    if (strncmp(*p, "false", 5) == 0) { *p += 5; return jnew(J_BOOL); }
    if (strncmp(*p, "null", 4) == 0) { *p += 4; return jnew(J_NULL); }
    json *n = jnew(J_NUM);
    char *end = NULL;
    n->num = strtod(*p, &end);
    *p = end;
    return n;
}

static void jfree(json *j) {
    if (!j) return;
    for (size_t i = 0; i < j->n; i++) jfree(j->items[i]);
    free(j->items);
    free(j->str);
    free(j->key);
    free(j);
}

static json *jget(const json *o, const char *key) {
    if (!o || o->type != J_OBJ) return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->items[i]->key, key) == 0) return o->items[i];
    return NULL;
}

static const char *jstr(const json *o, const char *key) {
    const json *v = jget(o, key);
    return v && v->type == J_STR ? v->str : NULL;
}

static int64_t jint(const json *o, const char *key, int64_t dflt) {
    const json *v = jget(o, key);
    return v && v->type == J_NUM ? (int64_t)v->num : dflt;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    size_t got = fread(buf, 1, (size_t)len, f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

static json *jload(const char *path) {
    char *text = read_file(path);
    if (!text) return NULL;
    const char *p = text;
    json *j = jparse_value(&p);
    free(text);
    return j;
}

/* ---- how C says each concept (the contract table's column) ---------------------------------- */

static const char *VOCABULARY[][2] = {
    {"connect", "`polylock_client_connect(url, &client)` (`polylock_connect_redlock(urls, n, &client)`)"},
    {"owner", "an explicit `uint64_t owner` on every call (`polylock_owner_current_thread()`)"},
    {"acquire", "`polylock_lock_acquire(lock, owner, wait_ms, lease_ms)` → `POLYLOCK_OK`"},
    {"wait_forever", "`POLYLOCK_WAIT_FOREVER` (-1)"},
    {"wait_none", "`POLYLOCK_NO_WAIT` (0)"},
    {"not_acquired", "`POLYLOCK_TIMEOUT` (3) from every acquire"},
    {"lease_watchdog", "`POLYLOCK_WATCHDOG` (-1)"},
    {"lease_fixed", "`lease_ms` > 0"},
    {"release", "`polylock_lock_release(lock, owner)`"},
    {"reenter", "`polylock_lock_acquire` again with the same owner"},
    {"hold_count", "`polylock_lock_hold_count(lock, owner, &n)`"},
    {"is_locked", "`polylock_lock_is_locked(lock, &locked)`"},
    {"fencing_token", "`polylock_lock_fencing_token(lock, owner, &token)`"},
    {"remaining_lease", "`polylock_lock_remaining_lease_ms(lock, &ms)` → `POLYLOCK_LEASE_NOT_HELD` (-2) / `POLYLOCK_LEASE_NO_EXPIRY` (-1) / ms"},
    {"extend", "none"},
    {"force_unlock", "`polylock_lock_force_unlock(lock)`"},
    {"lost_listener", "`polylock_lock_on_lost(lock, cb, userdata)`: `cb(userdata, name, owner, reason)` on a polylock thread"},
    {"lost_reasons", "`POLYLOCK_LOST_EXPIRED` (1), `_DELETED` (2), `_RENEWAL_FAILED` (3), `_SESSION_EXPIRED` (4), `_CLIENT_CLOSED` (5)"},
    {"is_lost", "`polylock_lock_lost_reason(lock, owner, &reason)` → 0 or `POLYLOCK_LOST_*`"},
    {"suspended", "`polylock_client_suspended(client, &suspended)`"},
    {"section", "none: the caller brackets acquire and release"},
    {"timeout_error", "none (no section form); acquires return `POLYLOCK_TIMEOUT`"},
    {"base_error", "`polylock_result` (`uint32_t`, the table's number); `polylock_result_message`, `polylock_last_error_message`"},
    {"not_owner_error", "`POLYLOCK_NOT_OWNER` (4)"},
    {"read_write", "`polylock_client_read_write_lock(client, name, POLYLOCK_READ | POLYLOCK_WRITE, &lock)`"},
    {"semaphore_acquire", "`polylock_semaphore_acquire(sem, n, wait_ms)` → `POLYLOCK_OK` / `POLYLOCK_TIMEOUT`"},
    {"permit_acquire", "`polylock_permit_semaphore_acquire(sem, wait_ms, lease_ms, id, len)` → `POLYLOCK_OK` / `POLYLOCK_TIMEOUT`"},
    {"latch_wait", "`polylock_latch_wait(latch, wait_ms)` → `POLYLOCK_OK` open / `POLYLOCK_TIMEOUT`"},
    {"multi", "`polylock_multi_lock_new(locks, n, &multi)`"},
    {"election", "`polylock_election_new(client, name, identity, &e)`: `polylock_election_campaign(e, wait_ms, &term)` → `POLYLOCK_OK` / `POLYLOCK_TIMEOUT`, `_resign`, `_leader`, `_candidates`"},
    {"close", "`polylock_client_close(client)`, then `polylock_client_free(client)`"},
};

static const struct { polylock_result code; const char *name; } ERRORS[] = {
    {POLYLOCK_NULL_PARAMETER, "NULL_PARAMETER"}, {POLYLOCK_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
    {POLYLOCK_TIMEOUT, "TIMEOUT"}, {POLYLOCK_NOT_OWNER, "NOT_OWNER"}, {POLYLOCK_LOCK_LOST, "LOCK_LOST"},
    {POLYLOCK_CONNECTION, "CONNECTION"}, {POLYLOCK_AUTH, "AUTH"}, {POLYLOCK_BACKEND, "BACKEND"},
    {POLYLOCK_INVALID_STATE, "INVALID_STATE"}, {POLYLOCK_INTERNAL, "INTERNAL"}, {POLYLOCK_PANIC, "PANIC"},
    {POLYLOCK_CANCELLED, "CANCELLED"}, {POLYLOCK_UNSUPPORTED, "UNSUPPORTED"},
    {POLYLOCK_UPGRADE_NOT_SUPPORTED, "UPGRADE_NOT_SUPPORTED"}, {POLYLOCK_NOT_REPLICATED, "NOT_REPLICATED"},
    {POLYLOCK_STALE_TOKEN, "STALE_TOKEN"},
};

static const char *REASONS[] = {NULL, "EXPIRED", "DELETED", "RENEWAL_FAILED", "SESSION_EXPIRED", "CLIENT_CLOSED"};

static const char *error_name(polylock_result r) {
    for (size_t i = 0; i < sizeof ERRORS / sizeof *ERRORS; i++)
        if (ERRORS[i].code == r) return ERRORS[i].name;
    return "UNKNOWN";
}

/* ---- one scenario on one backend ------------------------------------------------------------ */

#define MAX_ITEMS 16
#define WORD 256

typedef struct {
    char word[WORD];    /* the outcome in the suite's words */
    char message[2048]; /* the error's detail */
    bool has_token;
    uint64_t token;
    bool has_ms;
    int64_t ms;
    char id[POLYLOCK_PERMIT_ID_LEN];
    bool is_num;
    int64_t num;
} outcome;

typedef struct {
    pthread_mutex_t mu;
    int n;
    uint64_t owner[8];
    uint32_t reason[8];
} lost_seen;

typedef struct run run;

typedef struct {
    char client[16];
    char obj[16];
    int type; /* 0 lock, 1 semaphore, 2 permit semaphore, 3 latch, 4 election */
    void *h;
} handle_t;

struct run {
    const json *suite, *scenario;
    const char *backend;
    char prefix[64];
    bool zk;
    char *urls[16];
    size_t nurls;
    polylock_options opts;
    struct { char id[16]; polylock_client *c; } clients[MAX_ITEMS];
    size_t nclients;
    handle_t handles[4 * MAX_ITEMS];
    size_t nhandles;
    char permits_set[MAX_ITEMS][16];
    size_t npermits_set;
    struct { char key[16]; bool is_id; uint64_t token; char id[POLYLOCK_PERMIT_ID_LEN]; } saved[MAX_ITEMS];
    size_t nsaved;
    struct { char key[40]; lost_seen *seen; } lost[MAX_ITEMS];
    size_t nlost;
    struct { char actor[16]; const json *step; pthread_t thread; outcome out; bool on; } bg[MAX_ITEMS];
    pthread_mutex_t mu; /* handles, clients, saved (a background step makes its handle beforehand) */
};

static const char *actor_client(run *r, const char *actor) {
    const json *actors = jget(r->scenario, "actors");
    if (!actors) actors = jget(r->suite, "default_actors");
    return jstr(actors, actor);
}

static uint64_t owner_of(const char *actor) {
    /* Owners are small numbers, one per actor name; they are a client's: two clients never mix. */
    uint64_t h = 1469598103934665603ull;
    for (const char *c = actor; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return (h % 1000000) + 1;
}

static void set_error(outcome *o, polylock_result rc) {
    snprintf(o->word, sizeof o->word, "error:%s", error_name(rc));
    polylock_last_error_message(o->message, sizeof o->message);
}

static polylock_result client_of(run *r, const char *actor, polylock_client **out) {
    const char *cid = actor_client(r, actor);
    if (!cid) return POLYLOCK_INVALID_ARGUMENT;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nclients; i++) {
        if (strcmp(r->clients[i].id, cid) == 0) {
            *out = r->clients[i].c;
            pthread_mutex_unlock(&r->mu);
            return POLYLOCK_OK;
        }
    }
    polylock_result rc = r->nurls > 1
        ? polylock_connect_redlock_with((const char *const *)r->urls, r->nurls, &r->opts, out)
        : polylock_client_connect_with(r->urls[0], &r->opts, out);
    if (rc == POLYLOCK_OK) {
        snprintf(r->clients[r->nclients].id, 16, "%s", cid);
        r->clients[r->nclients++].c = *out;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

static void name_of(run *r, const char *obj, char *out, size_t len) {
    const json *o = jget(jget(r->scenario, "objects"), obj);
    const char *lit = jstr(o, "literal");
    if (lit) {
        snprintf(out, len, "%s", lit);
        return;
    }
    const char *base = jstr(o, "name");
    char lower[16];
    if (!base) {
        size_t i = 0;
        for (; obj[i] && i < 15; i++) lower[i] = (char)(obj[i] >= 'A' && obj[i] <= 'Z' ? obj[i] + 32 : obj[i]);
        lower[i] = 0;
        base = lower;
    }
    if (r->zk) snprintf(out, len, "/%s/%s", r->prefix, base);
    else snprintf(out, len, "%s:%s", r->prefix, base);
}

static polylock_result handle_of(run *r, const char *actor, const char *obj, handle_t **out) {
    const char *cid = actor_client(r, actor);
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nhandles; i++) {
        if (strcmp(r->handles[i].client, cid) == 0 && strcmp(r->handles[i].obj, obj) == 0) {
            *out = &r->handles[i];
            pthread_mutex_unlock(&r->mu);
            return POLYLOCK_OK;
        }
    }
    pthread_mutex_unlock(&r->mu);
    polylock_client *c = NULL;
    polylock_result rc = client_of(r, actor, &c);
    if (rc != POLYLOCK_OK) return rc;
    const json *o = jget(jget(r->scenario, "objects"), obj);
    const char *type = jstr(o, "type");
    char name[256];
    name_of(r, obj, name, sizeof name);
    handle_t h = {.type = 0, .h = NULL};
    snprintf(h.client, 16, "%s", cid);
    snprintf(h.obj, 16, "%s", obj);
    polylock_lock *l = NULL;
    if (strcmp(type, "lock") == 0) rc = polylock_lock_new(c, name, &l);
    else if (strcmp(type, "fair") == 0) rc = polylock_client_fair_lock(c, name, &l);
    else if (strcmp(type, "mutex") == 0) rc = polylock_mutex_new(c, name, &l);
    else if (strcmp(type, "read") == 0) rc = polylock_client_read_write_lock(c, name, POLYLOCK_READ, &l);
    else if (strcmp(type, "write") == 0) rc = polylock_client_read_write_lock(c, name, POLYLOCK_WRITE, &l);
    else if (strcmp(type, "multi") == 0) {
        const json *of = jget(o, "of");
        polylock_lock *members[MAX_ITEMS];
        for (size_t i = 0; i < of->n; i++) {
            handle_t *m = NULL;
            rc = handle_of(r, actor, of->items[i]->str, &m);
            if (rc != POLYLOCK_OK) return rc;
            members[i] = m->h;
        }
        rc = polylock_multi_lock_new(members, of->n, &l);
    } else if (strcmp(type, "semaphore") == 0) {
        h.type = 1;
        rc = polylock_semaphore_new(c, name, (polylock_semaphore **)&h.h);
    } else if (strcmp(type, "permit_semaphore") == 0) {
        h.type = 2;
        rc = polylock_permit_semaphore_new(c, name, (polylock_permit_semaphore **)&h.h);
    } else if (strcmp(type, "latch") == 0) {
        h.type = 3;
        rc = polylock_latch_new(c, name, (polylock_latch **)&h.h);
    } else if (strcmp(type, "election") == 0) {
        /* A candidate campaigns with its actor's name as its identity. */
        h.type = 4;
        rc = polylock_election_new(c, name, actor, (polylock_election **)&h.h);
    } else {
        return POLYLOCK_INTERNAL;
    }
    if (rc != POLYLOCK_OK) return rc;
    if (h.type == 0) h.h = l;
    const json *permits = jget(o, "permits");
    if (permits) {
        bool first = true;
        pthread_mutex_lock(&r->mu);
        for (size_t i = 0; i < r->npermits_set; i++)
            if (strcmp(r->permits_set[i], obj) == 0) first = false;
        if (first) snprintf(r->permits_set[r->npermits_set++], 16, "%s", obj);
        pthread_mutex_unlock(&r->mu);
        if (first) {
            bool set = false;
            rc = h.type == 1 ? polylock_semaphore_try_set_permits(h.h, (uint32_t)permits->num, &set)
                             : polylock_permit_semaphore_try_set_permits(h.h, (uint32_t)permits->num, &set);
            if (rc != POLYLOCK_OK) return rc;
        }
    }
    pthread_mutex_lock(&r->mu);
    r->handles[r->nhandles] = h;
    *out = &r->handles[r->nhandles++];
    pthread_mutex_unlock(&r->mu);
    return POLYLOCK_OK;
}

static int64_t wait_of(const json *step) {
    const json *w = jget(step, "wait");
    if (!w || (w->type == J_STR && strcmp(w->str, "forever") == 0)) return POLYLOCK_WAIT_FOREVER;
    if (w->type == J_STR && strcmp(w->str, "none") == 0) return POLYLOCK_NO_WAIT;
    return (int64_t)w->num;
}

static void on_lost(void *userdata, const char *name, uint64_t owner, uint32_t reason) {
    (void)name;
    lost_seen *s = userdata;
    pthread_mutex_lock(&s->mu);
    if (s->n < 8) {
        s->owner[s->n] = owner;
        s->reason[s->n] = reason;
        s->n++;
    }
    pthread_mutex_unlock(&s->mu);
}

static void sleep_ms(int64_t ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void word(outcome *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->word, sizeof o->word, fmt, ap);
    va_end(ap);
}

static void num(outcome *o, int64_t n) {
    o->is_num = true;
    o->num = n;
    word(o, "%" PRId64, n);
}

/* Run one step; the outcome in the suite's words. False: the runner could not (o->word says why). */
static bool do_step(run *r, const char *actor, const json *step, outcome *o) {
    const char *op = jstr(step, "op");
    const char *obj = jstr(step, "on");
    uint64_t owner = owner_of(actor);
    polylock_result rc;
    if (strcmp(op, "connect") == 0) {
        const json *url = jget(step, "url");
        polylock_client *c = NULL;
        if (url->type == J_ARR) {
            const char *urls[16];
            for (size_t i = 0; i < url->n; i++) urls[i] = url->items[i]->str;
            rc = polylock_connect_redlock_with(urls, url->n, &r->opts, &c);
        } else {
            rc = polylock_client_connect_with(url->str, &r->opts, &c);
        }
        if (rc == POLYLOCK_OK) {
            polylock_client_close(c);
            polylock_client_free(c);
            word(o, "ok");
        } else {
            set_error(o, rc);
        }
        return true;
    }
    if (strcmp(op, "error_table") == 0) {
        size_t n = sizeof ERRORS / sizeof *ERRORS;
        char list[WORD] = "[";
        for (size_t i = 0; i < n; i++) {
            char msg[8];
            if (ERRORS[i].code != i + 1 || polylock_result_message(ERRORS[i].code, msg, sizeof msg) == 0) {
                word(o, "the table's numbers are out of order");
                return true;
            }
            strncat(list, i ? ", \"" : "\"", sizeof list - strlen(list) - 1);
            strncat(list, ERRORS[i].name, sizeof list - strlen(list) - 1);
            strncat(list, "\"", sizeof list - strlen(list) - 1);
        }
        strncat(list, "]", sizeof list - strlen(list) - 1);
        word(o, "%s", list);
        return true;
    }
    if (strcmp(op, "suspended") == 0 || strcmp(op, "close") == 0) {
        polylock_client *c = NULL;
        rc = client_of(r, actor, &c);
        if (rc == POLYLOCK_OK && strcmp(op, "close") == 0) {
            rc = polylock_client_close(c);
            if (rc == POLYLOCK_OK) word(o, "ok");
        } else if (rc == POLYLOCK_OK) {
            bool s = true;
            rc = polylock_client_suspended(c, &s);
            if (rc == POLYLOCK_OK) word(o, s ? "true" : "false");
        }
        if (rc != POLYLOCK_OK) set_error(o, rc);
        return true;
    }
    handle_t *h = NULL;
    rc = handle_of(r, actor, obj, &h);
    if (rc != POLYLOCK_OK) {
        set_error(o, rc);
        return true;
    }
    polylock_lock *l = h->type == 0 ? h->h : NULL;
    if (strcmp(op, "make") == 0) {
        word(o, "ok");
    } else if (strcmp(op, "acquire") == 0) {
        rc = polylock_lock_acquire(l, owner, wait_of(step), jint(step, "lease", POLYLOCK_WATCHDOG));
        if (rc == POLYLOCK_OK) {
            word(o, "acquired");
            o->has_token = polylock_lock_fencing_token(l, owner, &o->token) == POLYLOCK_OK;
        } else if (rc == POLYLOCK_TIMEOUT) {
            word(o, "not_acquired");
        } else {
            set_error(o, rc);
        }
    } else if (strcmp(op, "release") == 0) {
        rc = polylock_lock_release(l, owner);
        if (rc == POLYLOCK_OK) word(o, "ok");
        else set_error(o, rc);
    } else if (strcmp(op, "held") == 0) {
        uint32_t n = 0;
        rc = polylock_lock_hold_count(l, owner, &n);
        if (rc == POLYLOCK_OK) num(o, n);
        else set_error(o, rc);
    } else if (strcmp(op, "is_locked") == 0) {
        bool b = false;
        rc = polylock_lock_is_locked(l, &b);
        if (rc == POLYLOCK_OK) word(o, b ? "true" : "false");
        else set_error(o, rc);
    } else if (strcmp(op, "token") == 0) {
        rc = polylock_lock_fencing_token(l, owner, &o->token);
        if (rc == POLYLOCK_OK) {
            o->has_token = true;
            word(o, "token");
        } else {
            set_error(o, rc);
        }
    } else if (strcmp(op, "remaining_lease") == 0) {
        int64_t ms = 0;
        rc = polylock_lock_remaining_lease_ms(l, &ms);
        if (rc != POLYLOCK_OK) set_error(o, rc);
        else if (ms == POLYLOCK_LEASE_NOT_HELD) word(o, "not_held");
        else if (ms == POLYLOCK_LEASE_NO_EXPIRY) word(o, "no_expiry");
        else if (ms >= 0) {
            word(o, "expires");
            o->has_ms = true;
            o->ms = ms;
        } else word(o, "remaining lease %" PRId64, ms);
    } else if (strcmp(op, "force_unlock") == 0) {
        bool was = false;
        rc = polylock_lock_is_locked(l, &was);
        if (rc == POLYLOCK_OK) rc = polylock_lock_force_unlock(l);
        if (rc == POLYLOCK_OK) word(o, was ? "true" : "false");
        else set_error(o, rc);
    } else if (strcmp(op, "is_lost") == 0) {
        uint32_t reason = 0;
        rc = polylock_lock_lost_reason(l, owner, &reason);
        if (rc == POLYLOCK_OK) word(o, reason ? "true" : "false");
        else set_error(o, rc);
    } else if (strcmp(op, "listen") == 0) {
        lost_seen *seen = calloc(1, sizeof *seen);
        pthread_mutex_init(&seen->mu, NULL);
        pthread_mutex_lock(&r->mu);
        snprintf(r->lost[r->nlost].key, sizeof r->lost[r->nlost].key, "%s/%s", actor, obj);
        r->lost[r->nlost++].seen = seen;
        pthread_mutex_unlock(&r->mu);
        if (h->type != 0) {
            word(o, "the C API has lost callbacks on locks only");
            return false;
        }
        rc = polylock_lock_on_lost(l, on_lost, seen);
        if (rc == POLYLOCK_OK) word(o, "ok");
        else set_error(o, rc);
    } else if (strcmp(op, "wait_lost") == 0) {
        char key[40];
        snprintf(key, sizeof key, "%s/%s", actor, obj);
        lost_seen *seen = NULL;
        for (size_t i = 0; i < r->nlost; i++)
            if (strcmp(r->lost[i].key, key) == 0) seen = r->lost[i].seen;
        if (!seen) {
            word(o, "wait_lost without listen");
            return false;
        }
        int64_t deadline = now_ms() + jint(step, "within", 5000);
        word(o, "not_lost");
        while (now_ms() < deadline) {
            pthread_mutex_lock(&seen->mu);
            int n = seen->n;
            uint32_t reason = n ? seen->reason[0] : 0;
            pthread_mutex_unlock(&seen->mu);
            if (n) {
                if (reason < 1 || reason > 5) word(o, "lost with reason %u", reason);
                else word(o, "lost:%s", REASONS[reason]);
                break;
            }
            sleep_ms(20);
        }
    } else if (strcmp(op, "sem_set") == 0) {
        bool set = false;
        rc = polylock_semaphore_try_set_permits(h->h, (uint32_t)jint(step, "n", 0), &set);
        if (rc == POLYLOCK_OK) word(o, set ? "true" : "false");
        else set_error(o, rc);
    } else if (strcmp(op, "sem_acquire") == 0) {
        rc = polylock_semaphore_acquire(h->h, (uint32_t)jint(step, "n", 1), wait_of(step));
        if (rc == POLYLOCK_OK) word(o, "acquired");
        else if (rc == POLYLOCK_TIMEOUT) word(o, "not_acquired");
        else set_error(o, rc);
    } else if (strcmp(op, "sem_release") == 0) {
        rc = polylock_semaphore_release(h->h, (uint32_t)jint(step, "n", 1));
        if (rc == POLYLOCK_OK) word(o, "ok");
        else set_error(o, rc);
    } else if (strcmp(op, "sem_available") == 0 || strcmp(op, "sem_drain") == 0) {
        int64_t n = 0;
        rc = strcmp(op, "sem_drain") == 0 ? polylock_semaphore_drain(h->h, &n) : polylock_semaphore_available(h->h, &n);
        if (rc == POLYLOCK_OK) num(o, n);
        else set_error(o, rc);
    } else if (strcmp(op, "sem_add") == 0) {
        rc = polylock_semaphore_add_permits(h->h, jint(step, "n", 0));
        if (rc == POLYLOCK_OK) word(o, "ok");
        else set_error(o, rc);
    } else if (strcmp(op, "permit_acquire") == 0) {
        rc = polylock_permit_semaphore_acquire(h->h, wait_of(step), jint(step, "lease", POLYLOCK_WATCHDOG), o->id, sizeof o->id);
        if (rc == POLYLOCK_OK) word(o, "acquired");
        else if (rc == POLYLOCK_TIMEOUT) word(o, "not_acquired");
        else set_error(o, rc);
    } else if (strcmp(op, "permit_release") == 0) {
        const char *key = jstr(step, "id");
        const char *id = NULL;
        for (size_t i = 0; i < r->nsaved; i++)
            if (strcmp(r->saved[i].key, key) == 0) id = r->saved[i].id;
        if (!id) {
            word(o, "no saved permit %s", key);
            return false;
        }
        rc = polylock_permit_semaphore_release(h->h, id);
        if (rc == POLYLOCK_OK) word(o, "ok");
        else set_error(o, rc);
    } else if (strcmp(op, "permit_available") == 0) {
        int64_t n = 0;
        rc = polylock_permit_semaphore_available(h->h, &n);
        if (rc == POLYLOCK_OK) num(o, n);
        else set_error(o, rc);
    } else if (strcmp(op, "latch_set") == 0) {
        bool set = false;
        rc = polylock_latch_try_set_count(h->h, (uint64_t)jint(step, "n", 1), &set);
        if (rc == POLYLOCK_OK) word(o, set ? "true" : "false");
        else set_error(o, rc);
    } else if (strcmp(op, "latch_count_down") == 0) {
        rc = polylock_latch_count_down(h->h);
        if (rc == POLYLOCK_OK) word(o, "ok");
        else set_error(o, rc);
    } else if (strcmp(op, "latch_count") == 0) {
        uint64_t n = 0;
        rc = polylock_latch_count(h->h, &n);
        if (rc == POLYLOCK_OK) num(o, (int64_t)n);
        else set_error(o, rc);
    } else if (strcmp(op, "latch_wait") == 0) {
        rc = polylock_latch_wait(h->h, wait_of(step));
        if (rc == POLYLOCK_OK) word(o, "open");
        else if (rc == POLYLOCK_TIMEOUT) word(o, "not_open");
        else set_error(o, rc);
    } else if (strcmp(op, "campaign") == 0) {
        uint64_t term = 0;
        rc = polylock_election_campaign(h->h, wait_of(step), &term);
        if (rc == POLYLOCK_OK) {
            word(o, "leading");
            o->has_token = true;
            o->token = term;
        } else if (rc == POLYLOCK_TIMEOUT) word(o, "not_leading");
        else set_error(o, rc);
    } else if (strcmp(op, "resign") == 0 || strcmp(op, "is_leader") == 0) {
        bool yes = false;
        rc = strcmp(op, "resign") == 0 ? polylock_election_resign(h->h, &yes) : polylock_election_is_leader(h->h, &yes);
        if (rc == POLYLOCK_OK) word(o, yes ? "true" : "false");
        else set_error(o, rc);
    } else if (strcmp(op, "leader") == 0) {
        char id[1100];
        size_t n = 0;
        uint64_t term = 0;
        bool has = false;
        rc = polylock_election_leader(h->h, id, sizeof id, &n, &term, &has);
        if (rc != POLYLOCK_OK) set_error(o, rc);
        else if (!has) word(o, "none");
        else {
            word(o, "leader:%s", id);
            o->has_token = true;
            o->token = term;
        }
    } else if (strcmp(op, "candidates") == 0) {
        /* Each identity followed by a NUL byte; rendered as the suite's list text. */
        char buf[4096], list[WORD] = "[";
        size_t n = 0, count = 0;
        rc = polylock_election_candidates(h->h, buf, sizeof buf, &n, &count);
        if (rc != POLYLOCK_OK) set_error(o, rc);
        else if (n > sizeof buf) word(o, "%zu bytes of candidates do not fit", n);
        else {
            const char *at = buf;
            for (size_t i = 0; i < count; i++) {
                strncat(list, i ? ", \"" : "\"", sizeof list - strlen(list) - 1);
                strncat(list, at, sizeof list - strlen(list) - 1);
                strncat(list, "\"", sizeof list - strlen(list) - 1);
                at += strlen(at) + 1;
            }
            strncat(list, "]", sizeof list - strlen(list) - 1);
            word(o, "%s", list);
        }
    } else {
        word(o, "unknown op %s", op);
        return false;
    }
    return true;
}

/* The expectation as text: a string, a number, true/false, or a list. */
static void expected_text(run *r, const json *step, char *out, size_t len) {
    const json *e = jget(step, "expect");
    if (e && e->type == J_OBJ) {
        const json *b = jget(e, r->backend);
        e = b ? b : jget(e, "*");
    }
    if (!e) snprintf(out, len, "(none)");
    else if (e->type == J_STR) snprintf(out, len, "%s", e->str);
    else if (e->type == J_BOOL) snprintf(out, len, "%s", e->b ? "true" : "false");
    else if (e->type == J_NUM) snprintf(out, len, "%" PRId64, (int64_t)e->num);
    else if (e->type == J_ARR) {
        snprintf(out, len, "[");
        for (size_t i = 0; i < e->n; i++) {
            strncat(out, i ? ", \"" : "\"", len - strlen(out) - 1);
            strncat(out, e->items[i]->str, len - strlen(out) - 1);
            strncat(out, "\"", len - strlen(out) - 1);
        }
        strncat(out, "]", len - strlen(out) - 1);
    } else snprintf(out, len, "(null)");
}

static bool saved_token(run *r, const char *key, uint64_t *out) {
    for (size_t i = 0; i < r->nsaved; i++)
        if (strcmp(r->saved[i].key, key) == 0 && !r->saved[i].is_id) {
            *out = r->saved[i].token;
            return true;
        }
    return false;
}

static bool compare_token(run *r, const char *want, const outcome *o, char *why, size_t len) {
    uint64_t prev = 0;
    if (!o->has_token) return snprintf(why, len, "no token"), false;
    if (!saved_token(r, want + 1, &prev)) return snprintf(why, len, "no saved token %s", want + 1), false;
    if ((want[0] == '>' && o->token > prev) || (want[0] == '=' && o->token == prev)) return true;
    snprintf(why, len, "token %" PRIu64 " is not %c %" PRIu64, o->token, want[0], prev);
    return false;
}

/* Check an outcome against its step; false (with why) on a difference. */
static bool check(run *r, const json *step, const outcome *o, char *why, size_t len) {
    char want[WORD];
    expected_text(r, step, want, sizeof want);
    if (strcmp(jstr(step, "op"), "token") == 0) return compare_token(r, want, o, why, len);
    if (strcmp(o->word, want) != 0) {
        snprintf(why, len, "expected %s, got %s %s", want, o->word, o->message);
        return false;
    }
    const char *msg = jstr(step, "message");
    if (msg && !strstr(o->message, msg)) {
        snprintf(why, len, "the message does not name %s: %s", msg, o->message);
        return false;
    }
    const char *secret = jstr(step, "absent");
    if (secret && strstr(o->message, secret)) {
        snprintf(why, len, "the error shows \"%s\": %s", secret, o->message);
        return false;
    }
    const char *tok = jstr(step, "token");
    if (o->has_token && tok && !compare_token(r, tok, o, why, len)) return false;
    const char *save = jstr(step, "save");
    if (save && (o->has_token || o->id[0])) {
        pthread_mutex_lock(&r->mu);
        snprintf(r->saved[r->nsaved].key, 16, "%s", save);
        r->saved[r->nsaved].is_id = o->id[0] != 0;
        r->saved[r->nsaved].token = o->token;
        snprintf(r->saved[r->nsaved].id, POLYLOCK_PERMIT_ID_LEN, "%s", o->id);
        r->nsaved++;
        pthread_mutex_unlock(&r->mu);
    }
    if (o->has_ms) {
        int64_t max = jint(step, "max_ms", -1), min = jint(step, "min_ms", -1);
        if (max >= 0 && o->ms > max) return snprintf(why, len, "%" PRId64 " ms left, more than %" PRId64, o->ms, max), false;
        if (min >= 0 && o->ms < min) return snprintf(why, len, "%" PRId64 " ms left, less than %" PRId64, o->ms, min), false;
    }
    return true;
}

typedef struct {
    run *r;
    const char *actor;
    const json *step;
    outcome *out;
    bool ok;
} bg_job;

static void *bg_main(void *arg) {
    bg_job *j = arg;
    j->ok = do_step(j->r, j->actor, j->step, j->out);
    return NULL;
}

/* Run one instance; NULL when it passed, else why (a static buffer of the caller's). */
static bool run_instance(run *r, char *why, size_t len) {
    const json *steps = jget(r->scenario, "steps");
    bool pass = true;
    bg_job jobs[MAX_ITEMS];
    size_t njobs = 0;
    for (size_t i = 0; i < steps->n && pass; i++) {
        const json *step = steps->items[i];
        const char *op = jstr(step, "op");
        if (strcmp(op, "sleep") == 0) {
            sleep_ms(jint(step, "ms", 0));
            continue;
        }
        const char *actor = jstr(step, "actor");
        if (strcmp(op, "join") == 0) {
            bool found = false;
            for (size_t b = 0; b < MAX_ITEMS; b++) {
                if (!r->bg[b].on || strcmp(r->bg[b].actor, actor) != 0) continue;
                found = true;
                r->bg[b].on = false;
                pthread_join(r->bg[b].thread, NULL);
                char w[384];
                if (!check(r, r->bg[b].step, &r->bg[b].out, w, sizeof w)) {
                    snprintf(why, len, "step %zu (join %s): %s", i, jstr(r->bg[b].step, "op"), w);
                    pass = false;
                }
                break;
            }
            if (!found) {
                snprintf(why, len, "step %zu: join without a background step", i);
                pass = false;
            }
            continue;
        }
        if (jget(step, "bg")) {
            const char *obj = jstr(step, "on");
            handle_t *h = NULL;
            if (obj) handle_of(r, actor, obj, &h); /* made now, so the thread finds it */
            size_t b = 0;
            while (r->bg[b].on) b++;
            r->bg[b].on = true;
            snprintf(r->bg[b].actor, 16, "%s", actor);
            r->bg[b].step = step;
            memset(&r->bg[b].out, 0, sizeof r->bg[b].out);
            jobs[njobs] = (bg_job){r, actor, step, &r->bg[b].out, false};
            pthread_create(&r->bg[b].thread, NULL, bg_main, &jobs[njobs]);
            njobs++;
            continue;
        }
        outcome o;
        memset(&o, 0, sizeof o);
        if (!do_step(r, actor, step, &o)) {
            snprintf(why, len, "step %zu (%s): runner: %s", i, op, o.word);
            pass = false;
            break;
        }
        char w[384];
        if (!check(r, step, &o, w, sizeof w)) {
            snprintf(why, len, "step %zu (%s %s): %s", i, op, jstr(step, "on") ? jstr(step, "on") : "", w);
            pass = false;
        }
    }
    for (size_t b = 0; b < MAX_ITEMS; b++) {
        if (r->bg[b].on) {
            /* Closing the clients ends the waits; the thread is joined after. */
            for (size_t c = 0; c < r->nclients; c++) polylock_client_close(r->clients[c].c);
            pthread_join(r->bg[b].thread, NULL);
            r->bg[b].on = false;
        }
    }
    for (size_t c = 0; c < r->nclients; c++) polylock_client_close(r->clients[c].c);
    for (size_t i = 0; i < r->nhandles; i++) {
        switch (r->handles[i].type) {
            case 0: polylock_lock_free(r->handles[i].h); break;
            case 1: polylock_semaphore_free(r->handles[i].h); break;
            case 2: polylock_permit_semaphore_free(r->handles[i].h); break;
            case 3: polylock_latch_free(r->handles[i].h); break;
            default: polylock_election_free(r->handles[i].h); break;
        }
    }
    for (size_t c = 0; c < r->nclients; c++) polylock_client_free(r->clients[c].c);
    /* A callback already under way when its handle was freed finishes before its userdata goes. */
    if (r->nlost) sleep_ms(50);
    for (size_t i = 0; i < r->nlost; i++) {
        pthread_mutex_destroy(&r->lost[i].seen->mu);
        free(r->lost[i].seen);
    }
    return pass;
}

typedef struct {
    const json *suite, *sc;
    const char *id, *backend;
    polylock_options opts;
    int serial;
    bool passed;
    char why[512];
} instance;

typedef struct {
    instance *all;
    size_t n, next;
    pthread_mutex_t mu;
} pool;

/* Run one instance: its servers' URLs from the environment, its names of its own. */
static void run_one(instance *in) {
    run *r = calloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->suite = in->suite;
    r->scenario = in->sc;
    r->backend = in->backend;
    r->opts = in->opts;
    snprintf(r->prefix, sizeof r->prefix, "pc/%s-%d-%d", RUNTIME, (int)getpid(), in->serial);
    const json *spec = jget(jget(in->suite, "backends"), in->backend);
    r->zk = jget(spec, "paths") != NULL;
    const char *env = jstr(spec, "env");
    const char *value = env && getenv(env) ? getenv(env) : "";
    const char *query = jstr(spec, "query");
    char *copy = strdup(value);
    char *save = NULL;
    for (char *tok = jget(spec, "list") ? strtok_r(copy, ",", &save) : copy; tok && r->nurls < 16;
         tok = jget(spec, "list") ? strtok_r(NULL, ",", &save) : NULL) {
        size_t ulen = strlen(tok) + (query ? strlen(query) + 2 : 0) + 1;
        r->urls[r->nurls] = malloc(ulen);
        snprintf(r->urls[r->nurls], ulen, "%s%s%s", tok, query ? (strchr(tok, '?') ? "&" : "?") : "", query ? query : "");
        r->nurls++;
    }
    free(copy);
    in->passed = run_instance(r, in->why, sizeof in->why);
    for (size_t u = 0; u < r->nurls; u++) free(r->urls[u]);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void *pool_main(void *arg) {
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n) return NULL;
        run_one(&p->all[i]);
    }
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    const char *root = "conformance", *only = NULL;
    bool verbose = false;
    int jobs = 4;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--scenarios") == 0 && i + 1 < argc) root = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) jobs = atoi(argv[++i]);
        else if (strcmp(argv[i], "-v") == 0) verbose = true;
        else if (strcmp(argv[i], "--vocabulary") == 0) {
            printf("{\"runtime\": \"%s\", \"says\": {", RUNTIME);
            for (size_t k = 0; k < sizeof VOCABULARY / sizeof *VOCABULARY; k++) {
                printf("%s\"%s\": \"", k ? ", " : "", VOCABULARY[k][0]);
                for (const char *c = VOCABULARY[k][1]; *c; c++) {
                    if (*c == '"' || *c == '\\') putchar('\\');
                    putchar(*c);
                }
                putchar('"');
            }
            printf("}, \"errors\": [");
            for (size_t k = 0; k < sizeof ERRORS / sizeof *ERRORS; k++)
                printf("%s{\"number\": %u, \"name\": \"%s\", \"says\": \"`POLYLOCK_%s`\"}", k ? ", " : "",
                       (unsigned)ERRORS[k].code, ERRORS[k].name, ERRORS[k].name);
            printf("]}\n");
            return 0;
        }
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/suite.json", root);
    json *suite = jload(path);
    if (!suite) {
        fprintf(stderr, "no %s\n", path);
        return 2;
    }
    const json *copts = jget(suite, "client");
    polylock_options opts = {
        .watchdog_timeout_ms = (uint64_t)jint(copts, "watchdog_timeout_ms", 0),
        .connect_timeout_ms = (uint64_t)jint(copts, "connect_timeout_ms", 0),
        .command_timeout_ms = (uint64_t)jint(copts, "command_timeout_ms", 0),
        .session_timeout_ms = (uint64_t)jint(copts, "session_timeout_ms", 0),
        .fair_wait_timeout_ms = (uint64_t)jint(copts, "fair_wait_timeout_ms", 0),
    };
    snprintf(path, sizeof path, "%s/scenarios", root);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "no %s\n", path);
        return 2;
    }
    char *names[64];
    size_t nfiles = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nfiles < 64) {
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0) names[nfiles++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, nfiles, sizeof *names, cmp_names);
    /* Every instance first (the documents stay loaded), then `jobs` threads run them. */
    json *docs[64];
    instance *all = NULL;
    size_t nall = 0, cap = 0;
    int na = 0;
    for (size_t f = 0; f < nfiles; f++) {
        snprintf(path, sizeof path, "%s/scenarios/%s", root, names[f]);
        json *doc = jload(path);
        docs[f] = doc;
        const json *scs = jget(doc, "scenarios");
        for (size_t s = 0; scs && s < scs->n; s++) {
            const json *sc = scs->items[s];
            const char *id = jstr(sc, "id");
            if (only && !strstr(id, only)) continue;
            const json *backends = jget(sc, "backends");
            for (size_t b = 0; b < backends->n; b++) {
                const char *backend = backends->items[b]->str;
                const json *nas = jget(sc, "not_applicable");
                char at[64];
                snprintf(at, sizeof at, "%s@%s", RUNTIME, backend);
                if (jget(nas, RUNTIME) || jget(nas, at)) {
                    na++;
                    continue;
                }
                if (nall == cap) all = realloc(all, (cap = cap ? 2 * cap : 64) * sizeof *all);
                all[nall++] = (instance){.suite = suite, .sc = sc, .id = id, .backend = backend, .opts = opts, .serial = (int)nall + 1};
            }
        }
    }
    pool p = {.all = all, .n = nall, .next = 0, .mu = PTHREAD_MUTEX_INITIALIZER};
    pthread_t threads[16];
    if (jobs < 1) jobs = 1;
    if (jobs > 16) jobs = 16;
    for (int t = 0; t < jobs; t++) pthread_create(&threads[t], NULL, pool_main, &p);
    for (int t = 0; t < jobs; t++) pthread_join(threads[t], NULL);
    int passed = 0, failed = 0;
    for (size_t i = 0; i < nall; i++) {
        if (all[i].passed) {
            passed++;
            if (verbose) printf("ok   %s@%s\n", all[i].id, all[i].backend);
        } else {
            failed++;
            printf("FAIL %s@%s: %s\n", all[i].id, all[i].backend, all[i].why);
        }
    }
    free(all);
    for (size_t f = 0; f < nfiles; f++) jfree(docs[f]);
    for (size_t f = 0; f < nfiles; f++) free(names[f]);
    jfree(suite);
    printf("conformance %s: %d passed, %d failed, %d not applicable\n", RUNTIME, passed, failed, na);
    return failed == 0 ? 0 : 1;
}
