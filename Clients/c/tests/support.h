/* What the C tests share: a real camerad of their own, and descriptor counts. */
#ifndef CAMERAD_TESTS_SUPPORT_H
#define CAMERAD_TESTS_SUPPORT_H

#include <camerad/client.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct test_daemon {
    pid_t pid;
    char directory[96];
    char socket[108];
} test_daemon;

/* Starts $CAMERAD with `cameras` virtual cameras on a socket in a new folder
   under $TMPDIR, and waits until it answers. */
bool test_daemon_start(test_daemon *daemon, int cameras);
/* SIGTERM, waits for it, removes its folder. */
void test_daemon_stop(test_daemon *daemon);

camerad_client *test_connect(const test_daemon *daemon, const char *name);

/* Open descriptors of this process. */
int test_open_fds(void);

/* Runs $CAMCTL with `arguments` against `daemon`; its output (malloc'd), or NULL. */
char *test_camctl(const test_daemon *daemon, const char *arguments);

/* Dispatches until `done(argument)`, up to 60 s; false when it never happened. */
bool test_iterate_until(camerad_client *client, bool (*done)(void *), void *argument);

#endif
