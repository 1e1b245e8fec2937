/* A client of a processor for bench/run-processor --c-clients: on one
 * keep-alive connection to depotd's socket, asks for the next batch
 * (POST …/next) and commits it with a one-field change per record (notes
 * set to NAME, POST …/commit), until the processor answers 204. Written in
 * C, like save-client.c, so that the clients cost the machine little next
 * to the daemon (2 cores); the Python clients of the same script parse
 * each batch's records as JSON, and take about a third of the machine.
 *
 *   processor-client SOCKET STORE PROCESSOR NAME
 *
 * Prints "records commits latency-seconds…" on one line: the records
 * committed, then each commit's latency.
 *
 * The batch's answer is read without a JSON parser: the lease is the
 * value after "lease":", each identifier the value after "id":" — the
 * benchmark's identifiers and leases are plain text, and a string value
 * that held those bytes would have its quotes escaped (\"), so it cannot
 * be taken for them.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Reads one answer (head and Content-Length body) into *buf, growing it; its status. */
static int answer(int fd, char **buf, size_t *cap, char **body) {
    size_t n = 0;
    char *end = NULL;
    (*buf)[0] = 0;
    for (;;) {
        if ((end = strstr(*buf, "\r\n\r\n"))) break;
        if (n + 1 >= *cap) { *cap *= 2; *buf = realloc(*buf, *cap); }
        ssize_t r = read(fd, *buf + n, *cap - 1 - n);
        if (r <= 0) return -1;
        n += r;
        (*buf)[n] = 0;
    }
    int status = atoi(*buf + 9);
    char *cl = strcasestr(*buf, "content-length:");
    long length = cl ? atol(cl + 15) : 0;
    size_t head = end + 4 - *buf;
    if (head + length + 1 > *cap) { *cap = head + length + 1; *buf = realloc(*buf, *cap); }
    while (n < head + length) {
        ssize_t r = read(fd, *buf + n, *cap - 1 - n);
        if (r <= 0) return -1;
        n += r;
    }
    (*buf)[n] = 0;
    *body = *buf + head;
    return status;
}

static void send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) { perror("write"); exit(1); }
        p += w;
        n -= w;
    }
}

/* The text after `key` up to the next quote, copied into out (at most cap - 1 bytes). */
static char *value_after(char *from, const char *key, char *out, size_t cap) {
    char *p = strstr(from, key);
    if (!p) return NULL;
    p += strlen(key);
    char *q = strchr(p, '"');
    if (!q || (size_t)(q - p) >= cap) return NULL;
    memcpy(out, p, q - p);
    out[q - p] = 0;
    return q;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: processor-client SOCKET STORE PROCESSOR NAME\n");
        return 2;
    }
    const char *store = argv[2], *processor = argv[3], *name = argv[4];
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 1; }
    size_t cap = 1 << 20, bodycap = 1 << 20, latcap = 1024;
    char *buf = malloc(cap), *commit = malloc(bodycap), *body, head[512];
    double *lat = malloc(latcap * sizeof *lat);
    long records = 0, commits = 0;
    for (;;) {
        int n = snprintf(head, sizeof head,
                         "POST /v1/stores/%s/processors/%s/next HTTP/1.1\r\nHost: depot\r\n"
                         "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", store, processor);
        send_all(fd, head, n);
        int status = answer(fd, &buf, &cap, &body);
        if (status == 204) break;
        if (status != 200) { fprintf(stderr, "next: %d %.200s\n", status, body); return 1; }
        char lease[256], id[256];
        if (!value_after(body, "\"lease\":\"", lease, sizeof lease)) { fprintf(stderr, "no lease\n"); return 1; }
        size_t len = snprintf(commit, bodycap, "{\"lease\":\"%s\",\"changes\":[", lease);
        long count = 0;
        char *p = strstr(body, "\"records\":");
        while (p && (p = value_after(p, "\"id\":\"", id, sizeof id))) {
            if (len + 512 > bodycap) { bodycap *= 2; commit = realloc(commit, bodycap); }
            len += snprintf(commit + len, bodycap - len,
                            "%s{\"update\":\"Trip\",\"identifier\":\"%s\",\"set\":{\"notes\":\"%s\"}}",
                            count ? "," : "", id, name);
            count++;
        }
        len += snprintf(commit + len, bodycap - len, "]}");
        n = snprintf(head, sizeof head,
                     "POST /v1/stores/%s/processors/%s/commit HTTP/1.1\r\nHost: depot\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", store, processor, len);
        double start = now();
        send_all(fd, head, n);
        send_all(fd, commit, len);
        status = answer(fd, &buf, &cap, &body);
        if (status != 200) { fprintf(stderr, "commit: %d %.200s\n", status, body); return 1; }
        if (commits == (long)latcap) { latcap *= 2; lat = realloc(lat, latcap * sizeof *lat); }
        lat[commits++] = now() - start;
        records += count;
    }
    printf("%ld %ld", records, commits);
    for (long i = 0; i < commits; i++) printf(" %.6f", lat[i]);
    printf("\n");
    return 0;
}
