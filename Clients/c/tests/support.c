#define _GNU_SOURCE
#include "support.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static bool answers(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path, sizeof address.sun_path, "%s", path);
    bool ok = connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
    close(fd);
    return ok;
}

bool test_daemon_start(test_daemon *daemon, int cameras) {
    const char *binary = getenv("CAMERAD");
    if (!binary || !*binary) return false;
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(daemon->directory, sizeof daemon->directory, "%s/camerad-c-XXXXXX", tmp);
    if (!mkdtemp(daemon->directory)) return false;
    snprintf(daemon->socket, sizeof daemon->socket, "%s/s", daemon->directory);
    char state[300], count[16];
    snprintf(state, sizeof state, "%s/state", daemon->directory);
    snprintf(count, sizeof count, "%d", cameras);
    daemon->pid = fork();
    if (daemon->pid == 0) {
        /* It goes when the test does, even one that crashed. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        execl(binary, binary, "--socket", daemon->socket, "--virtual-cameras", count, "--no-v4l2", "--no-alsa", "--hotplug", "off",
              "--state-dir", state, "--log-level", "error", (char *)NULL);
        _exit(127);
    }
    for (double deadline = now() + 60; now() < deadline;) {
        if (answers(daemon->socket)) return true;
        if (waitpid(daemon->pid, NULL, WNOHANG) == daemon->pid) break;
        usleep(20000);
    }
    test_daemon_stop(daemon);
    return false;
}

void test_daemon_stop(test_daemon *daemon) {
    if (daemon->pid > 0) {
        kill(daemon->pid, SIGTERM);
        waitpid(daemon->pid, NULL, 0);
        daemon->pid = 0;
    }
    if (daemon->directory[0]) {
        char command[400];
        snprintf(command, sizeof command, "rm -rf '%s'", daemon->directory);
        if (system(command) != 0) fprintf(stderr, "could not remove %s\n", daemon->directory);
        daemon->directory[0] = 0;
    }
}

camerad_client *test_connect(const test_daemon *daemon, const char *name) {
    camerad_error error;
    camerad_client *client = camerad_client_connect(daemon->socket, name, &error);
    if (!client) fprintf(stderr, "connect: %s\n", error.message);
    return client;
}

int test_open_fds(void) {
    DIR *directory = opendir("/proc/self/fd");
    int count = 0;
    for (struct dirent *entry; (entry = readdir(directory));) count += entry->d_name[0] != '.';
    closedir(directory);
    return count - 1; /* the directory's own */
}

char *test_output(const test_daemon *daemon, const char *command) {
    char line[1024];
    snprintf(line, sizeof line, "CAMERAD_SOCKET='%s' %s", daemon->socket, command);
    FILE *pipe = popen(line, "r");
    if (!pipe) return NULL;
    size_t size = 0, capacity = 65536;
    char *output = malloc(capacity);
    for (size_t n; (n = fread(output + size, 1, capacity - size - 1, pipe)) > 0;) {
        size += n;
        if (capacity - size < 1024) output = realloc(output, capacity *= 2);
    }
    output[size] = 0;
    if (pclose(pipe) != 0) {
        free(output);
        return NULL;
    }
    return output;
}

char *test_camctl(const test_daemon *daemon, const char *arguments) {
    const char *camctl = getenv("CAMCTL");
    if (!camctl || !*camctl) return NULL;
    char command[768];
    snprintf(command, sizeof command, "'%s' %s", camctl, arguments);
    return test_output(daemon, command);
}

camerad_frame *test_next_frame(camerad_client *client, camerad_stream *stream) {
    for (int i = 0; i < 600; i++) {
        camerad_frame *frame = camerad_stream_dequeue_frame(stream);
        if (frame) return frame;
        camerad_client_iterate(client, 100, NULL);
    }
    return NULL;
}

test_daemon test_shared;
static int fds_before;

int test_start_shared(void **state) { return test_daemon_start(&test_shared, 2) ? 0 : -1; }

int test_stop_shared(void **state) {
    test_daemon_stop(&test_shared);
    return 0;
}

int test_count_fds(void **state) {
    fds_before = test_open_fds();
    return 0;
}

int test_check_fds(void **state) {
    int after = test_open_fds();
    if (after != fds_before) fprintf(stderr, "descriptors: %d before the test, %d after\n", fds_before, after);
    return after == fds_before ? 0 : -1;
}

bool test_iterate_until(camerad_client *client, bool (*done)(void *), void *argument) {
    for (double deadline = now() + 60; !done(argument);) {
        if (now() > deadline) return false;
        if (camerad_client_iterate(client, 1000, NULL) == CAMERAD_ERROR_CONNECTION_LOST) return done(argument);
    }
    return true;
}
