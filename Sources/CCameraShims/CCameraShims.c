#define _GNU_SOURCE
#include "CCameraShims.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <linux/magic.h>
#include <malloc.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/vfs.h>

int CCameraShims_memfd_create(const char *name, unsigned int flags) {
    return memfd_create(name, flags);
}

int CCameraShims_is_dmabuf(int fd) {
    struct statfs info;
    return fstatfs(fd, &info) == 0 && info.f_type == DMA_BUF_MAGIC;
}

long CCameraShims_filesystem_type(int fd) {
    struct statfs info;
    return fstatfs(fd, &info) == 0 ? (long)info.f_type : -1;
}

void CCameraShims_return_free_memory(void) {
    malloc_trim(0);
}

int CCameraShims_set_thread_nice(int nice) {
    // Linux's nice value is the calling thread's alone (PRIO_PROCESS with 0: this thread).
    return setpriority(PRIO_PROCESS, 0, nice) == 0 ? 0 : errno;
}

int CCameraShims_set_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

const unsigned int CCameraShims_MFD_CLOEXEC = MFD_CLOEXEC;
const unsigned int CCameraShims_MFD_ALLOW_SEALING = MFD_ALLOW_SEALING;

const int CCameraShims_F_ADD_SEALS = F_ADD_SEALS;
const int CCameraShims_F_GET_SEALS = F_GET_SEALS;
const int CCameraShims_F_SEAL_SEAL = F_SEAL_SEAL;
const int CCameraShims_F_SEAL_SHRINK = F_SEAL_SHRINK;
const int CCameraShims_F_SEAL_GROW = F_SEAL_GROW;
const int CCameraShims_F_SEAL_WRITE = F_SEAL_WRITE;
const int CCameraShims_F_SEAL_FUTURE_WRITE = F_SEAL_FUTURE_WRITE;

struct cmsghdr *CCameraShims_CMSG_FIRSTHDR(const struct msghdr *msg) {
    return CMSG_FIRSTHDR(msg);
}

struct cmsghdr *CCameraShims_CMSG_NXTHDR(struct msghdr *msg, struct cmsghdr *cmsg) {
    return CMSG_NXTHDR(msg, cmsg);
}

unsigned char *CCameraShims_CMSG_DATA(struct cmsghdr *cmsg) {
    return CMSG_DATA(cmsg);
}

size_t CCameraShims_CMSG_SPACE(size_t length) {
    return CMSG_SPACE(length);
}

size_t CCameraShims_CMSG_LEN(size_t length) {
    return CMSG_LEN(length);
}

const int CCameraShims_MSG_CMSG_CLOEXEC = MSG_CMSG_CLOEXEC;

int CCameraShims_accept4(int socket, int flags) {
    return accept4(socket, NULL, NULL, flags);
}

int CCameraShims_peer_credentials(int socket, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
        return -1;
    }
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

uint64_t CCameraShims_load_acquire_u64(const void *address) {
    return __atomic_load_n((const uint64_t *)address, __ATOMIC_ACQUIRE);
}

void CCameraShims_store_release_u64(void *address, uint64_t value) {
    __atomic_store_n((uint64_t *)address, value, __ATOMIC_RELEASE);
}

enum { HELD_LOCKS_CAPACITY = 32 };
static __thread int held_locks[HELD_LOCKS_CAPACITY];
static __thread int held_locks_count;

int CCameraShims_held_locks_push(int level) {
    if (held_locks_count == HELD_LOCKS_CAPACITY) {
        return -1;
    }
    held_locks[held_locks_count] = level;
    return held_locks_count++;
}

void CCameraShims_held_locks_pop(void) {
    if (held_locks_count > 0) {
        held_locks_count--;
    }
}

int CCameraShims_held_locks_count(void) {
    return held_locks_count;
}

int CCameraShims_held_locks_at(int index) {
    return index >= 0 && index < held_locks_count ? held_locks[index] : -1;
}

int CCameraShims_poll_nanoseconds(struct pollfd *descriptors, unsigned long count, long long timeout) {
    if (timeout < 0) {
        return ppoll(descriptors, count, NULL, NULL);
    }
    struct timespec span = {.tv_sec = timeout / 1000000000LL, .tv_nsec = timeout % 1000000000LL};
    return ppoll(descriptors, count, &span, NULL);
}
