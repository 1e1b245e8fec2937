// A parse of TOML that cannot abort the process (issue #35).
//
// TOMLKit 0.6.0 builds toml++ with its assertions on, and several of them
// are reached by malformed text (a table header, an array, a date-time):
// each aborts. TOMLPrecheck names the typos known to reach them, with their
// line; this guard catches the rest, so that no byte sequence kills depotd
// at start or on SIGHUP. It parses the text once through TOMLKit's C
// interface with SIGABRT routed to a handler that jumps back here, on this
// thread only: an abort of any other thread meanwhile goes to the handler
// that was there before. Only C and C++ frames of toml++ lie between the
// jump and its target (no Swift frames, whose exclusivity records a jump
// would break); what the abandoned parse allocated is leaked, once per such
// file. Written by hand: no library does this.
#include "toml_guard.h"

#include <CTOML/CTOML.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static sigjmp_buf guard_jump;
static pthread_t guard_thread;
static volatile sig_atomic_t guard_armed = 0;
static struct sigaction guard_previous;

static void guard_on_abort(int signal, siginfo_t *info, void *context) {
    if (guard_armed && pthread_equal(pthread_self(), guard_thread)) {
        guard_armed = 0;
        siglongjmp(guard_jump, 1);
    }
    // Not the guarded parse: the handler that was there before decides.
    sigaction(SIGABRT, &guard_previous, NULL);
    if (guard_previous.sa_flags & SA_SIGINFO) {
        if (guard_previous.sa_sigaction) guard_previous.sa_sigaction(signal, info, context);
    } else if (guard_previous.sa_handler != SIG_IGN && guard_previous.sa_handler != SIG_DFL) {
        guard_previous.sa_handler(signal);
    } else {
        raise(SIGABRT);
    }
}

depot_toml_outcome depot_toml_guard(const char *text) {
    pthread_mutex_lock(&guard_lock);
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = guard_on_abort;
    mine.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&mine.sa_mask);
    sigaction(SIGABRT, &mine, &guard_previous);
    volatile depot_toml_outcome outcome = DEPOT_TOML_ABORTED;
    guard_thread = pthread_self();
    if (sigsetjmp(guard_jump, 1) == 0) {
        guard_armed = 1;
        CTOMLParseError error;
        memset(&error, 0, sizeof error);
        CTOMLTable *table = tableCreateFromString(text, &error);
        guard_armed = 0;
        if (table) {
            outcome = DEPOT_TOML_OK;  // TOMLKit has no call that frees a table
        } else {
            free((void *)error.description);
            outcome = DEPOT_TOML_ERROR;
        }
    }
    guard_armed = 0;
    sigaction(SIGABRT, &guard_previous, NULL);
    pthread_mutex_unlock(&guard_lock);
    return outcome;
}
