// libv4l2 and the V4L2 ioctl numbers, as Swift can call them, and nothing else.
//
// v4l2_open and v4l2_ioctl are variadic; VIDIOC_* are function-like macros
// (_IOWR...). Logic stays in Swift (the V4L2 target).
#ifndef CV4L2_H
#define CV4L2_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/videodev2.h>

int CV4L2_open(const char *path, int flags);
int CV4L2_close(int fd);
// Returns what v4l2_ioctl returns; retries on EINTR.
int CV4L2_ioctl(int fd, unsigned long request, void *argument);
void *CV4L2_mmap(size_t length, int fd, int64_t offset);
// VIDIOC_EXPBUF of a buffer's first plane, read-only and close-on-exec, as the
// kernel sees the node: libv4l2's plugin for multi-planar drivers shows them as
// single-planar and does not translate EXPBUF, so this asks the driver itself
// (safe: camerad never uses libv4lconvert's emulated formats). Returns the
// dma-buf's descriptor, or -1 with errno set.
int CV4L2_export_buffer(int fd, uint32_t index);
int CV4L2_munmap(void *start, size_t length);

extern const unsigned long CV4L2_VIDIOC_QUERYCAP;
extern const unsigned long CV4L2_VIDIOC_ENUM_FMT;
extern const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long CV4L2_VIDIOC_G_FMT;
extern const unsigned long CV4L2_VIDIOC_S_FMT;
extern const unsigned long CV4L2_VIDIOC_G_PARM;
extern const unsigned long CV4L2_VIDIOC_S_PARM;
extern const unsigned long CV4L2_VIDIOC_REQBUFS;
extern const unsigned long CV4L2_VIDIOC_QUERYBUF;
extern const unsigned long CV4L2_VIDIOC_QBUF;
extern const unsigned long CV4L2_VIDIOC_DQBUF;
extern const unsigned long CV4L2_VIDIOC_STREAMON;
extern const unsigned long CV4L2_VIDIOC_STREAMOFF;
extern const unsigned long CV4L2_VIDIOC_QUERY_EXT_CTRL;
extern const unsigned long CV4L2_VIDIOC_QUERYMENU;
extern const unsigned long CV4L2_VIDIOC_G_EXT_CTRLS;
extern const unsigned long CV4L2_VIDIOC_S_EXT_CTRLS;

// V4L2_CTRL_ID2WHICH and V4L2_CTRL_ID2CLASS are function-like macros.
uint32_t CV4L2_control_class(uint32_t id);

#endif
