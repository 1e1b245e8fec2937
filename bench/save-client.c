/* The load of bench/run-saves: N clients, each on its own keep-alive
 * connection to depotd's socket, each in a loop for D seconds (or for C
 * saves): PATCH one random Trip's budget, read the answer, note its
 * latency and its token. Written in C so that the load costs the machine
 * little next to the daemon (2 cores). Prints one line of figures and, with
 * a tokens file, every answered token (one a line).
 *
 *   save-client SOCKET CLIENTS SECONDS IDS-FILE [COUNT] [TOKENS-FILE]
 *
 * IDS-FILE holds the Trips' identifiers, one a line (URL-safe text); with
 * IDS-FILE "new:STORE", each save is a PUT of a new Trip (S<client>-<n>)
 * into STORE instead.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *sock_path;
static double seconds;
static long rows, count_limit;
static char **ids;
static const char *new_store;
static const char *store_name = "travel";
static FILE *tokens_out;
static double pace;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* SIGTERM ends the loops; the figures are printed still. */
static volatile sig_atomic_t stopping;
static void stop_now(int sig) { (void)sig; stopping = 1; }

typedef struct {
    int id;
    long done, errors, unchanged;
    double *lat;
    long cap;
    char **tokens;
} Client;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int dial(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, sock_path, sizeof a.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); exit(1); }
    return fd;
}

/* Reads one answer (head and Content-Length body) into buf; its status. */
static int answer(int fd, char *buf, size_t cap, char **body) {
    size_t n = 0;
    char *end = NULL;
    while (!(end = strstr(buf, "\r\n\r\n"))) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0) return -1;
        n += r;
        buf[n] = 0;
    }
    int status = atoi(buf + 9);
    char *cl = strcasestr(buf, "content-length:");
    long length = cl ? atol(cl + 15) : 0;
    size_t head = end + 4 - buf;
    while (n < head + length) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0) return -1;
        n += r;
    }
    buf[n] = 0;
    *body = buf + head;
    return status;
}

static void *run(void *arg) {
    Client *c = arg;
    int fd = dial();
    /* Another sequence each run: a run that repeated the last's values
     * would find them stored already (unchanged saves, no transaction). */
    unsigned seed = (unsigned)time(NULL) * 2654435761u + (unsigned)getpid() * 40503u + c->id * 7919u;
    char req[512], buf[65536], *body;
    double stop = now() + seconds;
    while (!stopping && ((count_limit == 0 && now() < stop) || (count_limit > 0 && c->done + c->errors < count_limit))) {
        long trip = new_store ? 0 : rand_r(&seed) % rows;
        char payload[200];
        int plen, len;
        if (new_store) {
            plen = snprintf(payload, sizeof payload,
                            "{\"name\":\"n\",\"startDate\":\"2025-01-01\",\"budget\":1.5,\"isFavorite\":false}");
            len = snprintf(req, sizeof req,
                           "PUT /v1/stores/%s/entities/Trip/records/S%d-%ld HTTP/1.1\r\nHost: depot\r\n"
                           "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                           new_store, c->id, c->done + c->errors, plen, payload);
        } else {
        plen = snprintf(payload, sizeof payload, "{\"budget\":%d.5}", rand_r(&seed) % 100000);
        len = snprintf(req, sizeof req,
                           "PATCH /v1/stores/%s/entities/Trip/records/%s HTTP/1.1\r\nHost: depot\r\n"
                           "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                           store_name, ids[trip], plen, payload);
        }
        buf[0] = 0;
        double t0 = now();
        if (write(fd, req, len) != len) { c->errors++; close(fd); fd = dial(); continue; }
        int status = answer(fd, buf, sizeof buf, &body);
        double t = now() - t0;
        if (status != 200) {
            c->errors++;
            if (status < 0) { close(fd); fd = dial(); }
            else if (c->errors < 3) fprintf(stderr, "status %d: %.200s\n", status, body);
            continue;
        }
        if (c->done == c->cap) {
            c->cap *= 2;
            c->lat = realloc(c->lat, c->cap * sizeof(double));
            c->tokens = realloc(c->tokens, c->cap * sizeof(char *));
        }
        c->lat[c->done] = t;
        if (strstr(body, "\"unchanged\"")) c->unchanged++;
        char *tok = strstr(body, "\"token\":\"");
        c->tokens[c->done] = NULL;
        if (tok) {
            tok += 9;
            char *q = strchr(tok, '"');
            c->tokens[c->done] = strndup(tok, q - tok);
        }
        c->done++;
        if (pace > 0) {
            /* SAVE_CLIENT_RATE: at most that many saves a second per client. */
            double next = t0 + 1.0 / pace, left = next - now();
            if (left > 0) {
                struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
                nanosleep(&ts, NULL);
            }
        }
    }
    close(fd);
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: save-client SOCKET CLIENTS SECONDS IDS-FILE [COUNT] [TOKENS]\n"); return 2; }
    sock_path = argv[1];
    if (getenv("SAVE_CLIENT_RATE")) pace = atof(getenv("SAVE_CLIENT_RATE"));
    int n = atoi(argv[2]);
    seconds = atof(argv[3]);
    if (getenv("DEPOT_BENCH_STORE")) store_name = getenv("DEPOT_BENCH_STORE");
    if (strncmp(argv[4], "new:", 4) == 0) new_store = argv[4] + 4;
    FILE *f = new_store ? NULL : fopen(argv[4], "r");
    if (new_store) goto loaded;
    if (!f) { perror(argv[4]); return 1; }
    long cap = 1 << 20;
    ids = malloc(cap * sizeof(char *));
    char line[256];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        if (rows == cap) { cap *= 2; ids = realloc(ids, cap * sizeof(char *)); }
        ids[rows++] = strdup(line);
    }
    fclose(f);
    if (rows == 0) { fprintf(stderr, "no identifiers in %s\n", argv[4]); return 1; }
loaded:
    count_limit = argc > 5 ? atol(argv[5]) : 0;
    if (argc > 6) tokens_out = fopen(argv[6], "w");
    signal(SIGTERM, stop_now);
    Client *cs = calloc(n, sizeof(Client));
    pthread_t *ts = calloc(n, sizeof(pthread_t));
    double t0 = now();
    for (int i = 0; i < n; i++) {
        cs[i].id = i;
        cs[i].cap = 1024;
        cs[i].lat = malloc(cs[i].cap * sizeof(double));
        cs[i].tokens = malloc(cs[i].cap * sizeof(char *));
        pthread_create(&ts[i], NULL, run, &cs[i]);
    }
    long total = 0, errors = 0, unchanged = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(ts[i], NULL);
        total += cs[i].done;
        errors += cs[i].errors;
        unchanged += cs[i].unchanged;
    }
    double elapsed = now() - t0;
    double *all = malloc((total + 1) * sizeof(double));
    long k = 0;
    for (int i = 0; i < n; i++)
        for (long j = 0; j < cs[i].done; j++) {
            all[k++] = cs[i].lat[j];
            if (tokens_out && cs[i].tokens[j]) fprintf(tokens_out, "%s\n", cs[i].tokens[j]);
        }
    if (tokens_out) fclose(tokens_out);
    qsort(all, total, sizeof(double), cmp);
    printf("{\"saves\": %ld, \"unchanged\": %ld, \"errors\": %ld, \"seconds\": %.3f, \"per_second\": %.1f, "
           "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f}\n",
           total, unchanged, errors, elapsed, total / elapsed, total ? all[total / 2] * 1e3 : 0,
           total ? all[(long)(total * 0.99)] * 1e3 : 0, total ? all[total - 1] * 1e3 : 0);
    (void)lock;
    return 0;
}
