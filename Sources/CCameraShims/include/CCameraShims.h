// What Swift cannot import from the C library, and nothing else.
//
// Each declaration says why it exists. Logic stays in Swift.
#ifndef CCAMERASHIMS_H
#define CCAMERASHIMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/un.h>

// memfd_create() and its flags are declared only under _GNU_SOURCE, which Swift's
// Glibc module does not define.
int CCameraShims_memfd_create(const char *name, unsigned int flags);

// Whether fd is a dma-buf (fstatfs: DMA_BUF_MAGIC); sys/vfs.h is not in Glibc's module.
int CCameraShims_is_dmabuf(int fd);

// The type of the filesystem fd is on (fstatfs's f_type, a *_MAGIC of linux/magic.h), or -1 with errno set;
// sys/vfs.h is not in Glibc's module.
long CCameraShims_filesystem_type(int fd);

// Gives the kernel back what glibc's malloc keeps free in every arena (malloc_trim(0)); malloc.h is not
// in Glibc's module.
void CCameraShims_return_free_memory(void);

// Sets the calling thread's nice value (Linux keeps one a thread); 0 or an errno
// (EACCES: lowering it takes CAP_SYS_NICE or RLIMIT_NICE).
int CCameraShims_set_thread_nice(int nice);

// Names the calling thread (at most 15 bytes; ps -L and perf show it);
// _GNU_SOURCE too. 0 or an errno.
int CCameraShims_set_thread_name(const char *name);

/* 64-bit loads and stores another process sees in order (shared memory). */
uint64_t CCameraShims_load_acquire_u64(const void *address);
void CCameraShims_store_release_u64(void *address, uint64_t value);

extern const unsigned int CCameraShims_MFD_CLOEXEC;
extern const unsigned int CCameraShims_MFD_ALLOW_SEALING;

// The F_*SEAL* fcntl commands and seals are _GNU_SOURCE-only too.
extern const int CCameraShims_F_ADD_SEALS;
extern const int CCameraShims_F_GET_SEALS;
extern const int CCameraShims_F_SEAL_SEAL;
extern const int CCameraShims_F_SEAL_SHRINK;
extern const int CCameraShims_F_SEAL_GROW;
extern const int CCameraShims_F_SEAL_WRITE;
// Linux 5.1: no new writable mapping or write(2); mappings made before stay writable.
extern const int CCameraShims_F_SEAL_FUTURE_WRITE;

// CMSG_* are function-like macros.
struct cmsghdr *CCameraShims_CMSG_FIRSTHDR(const struct msghdr *msg);
struct cmsghdr *CCameraShims_CMSG_NXTHDR(struct msghdr *msg, struct cmsghdr *cmsg);
unsigned char *CCameraShims_CMSG_DATA(struct cmsghdr *cmsg);
size_t CCameraShims_CMSG_SPACE(size_t length);
size_t CCameraShims_CMSG_LEN(size_t length);

// MSG_CMSG_CLOEXEC is _GNU_SOURCE-only.
extern const int CCameraShims_MSG_CMSG_CLOEXEC;

// accept4() is _GNU_SOURCE-only.
int CCameraShims_accept4(int socket, int flags);

// struct ucred and SO_PEERCRED are _GNU_SOURCE-only. Returns 0, or -1 with errno.
int CCameraShims_peer_credentials(int socket, pid_t *pid, uid_t *uid, gid_t *gid);

// ppoll() is _GNU_SOURCE-only: poll with a timeout in nanoseconds (negative: none).
int CCameraShims_poll_nanoseconds(struct pollfd *descriptors, unsigned long count, long long timeout);

// The lock-order checker's record of the ordered locks this thread holds
// (debug builds, CameraIPC's LockOrder.swift): a stack of level numbers in
// thread-local storage. push returns the depth before, or -1 when full.
int CCameraShims_held_locks_push(int level);
void CCameraShims_held_locks_pop(void);
int CCameraShims_held_locks_count(void);
int CCameraShims_held_locks_at(int index);

#endif
