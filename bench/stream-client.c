/* The client side of bench/live-latency: N streaming requests to depotd's
 * Unix socket, read with epoll, each NDJSON line stamped with the wall clock
 * (CLOCK_REALTIME, milliseconds) when the read that completed it returned.
 * Written in C so that the client's own work (100 sockets on the same two
 * cores as the daemon) adds microseconds, not the milliseconds a Python
 * loop adds, to the latency measured.
 *
 *   stream-client SOCKET N METHOD PATH BODY FIRST
 *
 * Prints "ready" on stderr once every stream has its response head and, with
 * FIRST = 1, its first line; on stdout, when stdin closes, one
 * "CONNECTION MILLISECONDS LINE" per line. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd;
    char *raw; size_t len, cap;      /* bytes not yet parsed */
    char *line; size_t llen, lcap;   /* the line being assembled */
    int head_done;
    size_t count;                    /* lines received */
} Stream;

typedef struct { int conn; double ms; char *text; } Line;
static Line *lines; static size_t nlines, clines;

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n) {
    if (*len + n + 1 > *cap) { *cap = (*len + n + 1) * 2; *buf = realloc(*buf, *cap); }
    memcpy(*buf + *len, data, n); *len += n; (*buf)[*len] = 0;
}

static void emit(int conn, double ms, Stream *s, const char *data, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (data[i] != '\n') { append(&s->line, &s->llen, &s->lcap, data + i, 1); continue; }
        if (s->llen > 0) {
            if (nlines == clines) { clines = clines ? clines * 2 : 4096; lines = realloc(lines, clines * sizeof(Line)); }
            lines[nlines++] = (Line){conn, ms, strndup(s->line, s->llen)};
            s->count++;
        }
        s->llen = 0;
    }
}

/* Dechunks what arrived; returns 1 once the head is in. */
static int parse(int conn, double ms, Stream *s) {
    if (!s->head_done) {
        char *end = strstr(s->raw, "\r\n\r\n");
        if (!end) return 0;
        size_t skip = end + 4 - s->raw;
        memmove(s->raw, s->raw + skip, s->len - skip); s->len -= skip; s->raw[s->len] = 0;
        s->head_done = 1;
    }
    size_t at = 0;
    for (;;) {
        char *crlf = memmem(s->raw + at, s->len - at, "\r\n", 2);
        if (!crlf) break;
        size_t size = strtoul(s->raw + at, NULL, 16);
        size_t data = crlf + 2 - s->raw;
        if (s->len < data + size + 2) break;
        emit(conn, ms, s, s->raw + data, size);
        at = data + size + 2;
    }
    memmove(s->raw, s->raw + at, s->len - at); s->len -= at; if (s->raw) s->raw[s->len] = 0;
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 7) { fprintf(stderr, "usage: stream-client SOCKET N METHOD PATH BODY FIRST\n"); return 2; }
    int n = atoi(argv[2]);
    const char *body = argv[5];
    int first = atoi(argv[6]);
    char request[65536];
    snprintf(request, sizeof request, "%s %s HTTP/1.1\r\nHost: depot\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n%s", argv[3], argv[4], strlen(body), body);
    int ep = epoll_create1(0);
    Stream *streams = calloc(n, sizeof(Stream));
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 1; }
        if (write(fd, request, strlen(request)) < 0) { perror("write"); return 1; }
        streams[i].fd = fd;
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
    }
    struct epoll_event in = {.events = EPOLLIN, .data.u32 = (uint32_t)n};
    epoll_ctl(ep, EPOLL_CTL_ADD, 0, &in);   /* stdin: its end ends the run */
    int waiting = n, ready = 0;
    char buf[1 << 16];
    for (;;) {
        struct epoll_event events[128];
        int k = epoll_wait(ep, events, 128, -1);
        if (k < 0 && errno == EINTR) continue;
        for (int j = 0; j < k; j++) {
            uint32_t i = events[j].data.u32;
            if (i == (uint32_t)n) {
                ssize_t r = read(0, buf, sizeof buf);
                if (r <= 0) goto done;
                continue;
            }
            Stream *s = &streams[i];
            ssize_t r = read(s->fd, buf, sizeof buf);
            struct timespec t; clock_gettime(CLOCK_REALTIME, &t);
            double ms = t.tv_sec * 1e3 + t.tv_nsec / 1e6;
            if (r <= 0) { epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL); continue; }
            append(&s->raw, &s->len, &s->cap, buf, r);
            int was = s->head_done && (!first || s->count > 0);
            parse(i, ms, s);
            if (!was && s->head_done && (!first || s->count > 0)) waiting--;
            if (!ready && waiting == 0) { ready = 1; fprintf(stderr, "ready\n"); }
        }
    }
done:
    for (size_t i = 0; i < nlines; i++) printf("%d %.3f %s\n", lines[i].conn, lines[i].ms, lines[i].text);
    return 0;
}
