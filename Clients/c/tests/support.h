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

/* A command's whole output (malloc'd), run by the shell with CAMERAD_SOCKET set to
   `daemon`'s socket; NULL when it fails. */
char *test_output(const test_daemon *daemon, const char *command);

/* Runs $CAMCTL with `arguments` against `daemon`; its output (malloc'd), or NULL. */
char *test_camctl(const test_daemon *daemon, const char *arguments);

/* The next frame of `stream`, dispatching up to 60 s for it; NULL when none came. */
camerad_frame *test_next_frame(camerad_client *client, camerad_stream *stream);

/* cmocka fixtures: a camerad with two virtual cameras for a group (`test_shared`),
   and a per-test check that the test gave back every descriptor it took. */
extern test_daemon test_shared;
int test_start_shared(void **state);
int test_stop_shared(void **state);
int test_count_fds(void **state);
int test_check_fds(void **state);

/* Dispatches until `done(argument)`, up to 60 s; false when it never happened. */
bool test_iterate_until(camerad_client *client, bool (*done)(void *), void *argument);

#endif
