#include "CV4L2.h"

#include <errno.h>
#include <fcntl.h>
#include <libv4l2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

int CV4L2_open(const char *path, int flags) { return v4l2_open(path, flags); }
int CV4L2_close(int fd) { return v4l2_close(fd); }

int CV4L2_ioctl(int fd, unsigned long request, void *argument) {
    int result;
    do {
        result = v4l2_ioctl(fd, request, argument);
    } while (result == -1 && errno == EINTR);
    return result;
}

void *CV4L2_mmap(size_t length, int fd, int64_t offset) {
    return v4l2_mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
}

int CV4L2_munmap(void *start, size_t length) { return v4l2_munmap(start, length); }

static int raw_ioctl(int fd, unsigned long request, void *argument) {
    int result;
    do {
        result = ioctl(fd, request, argument);
    } while (result == -1 && errno == EINTR);
    return result;
}

int CV4L2_export_buffer(int fd, uint32_t index) {
    struct v4l2_capability capability = {0};
    if (raw_ioctl(fd, VIDIOC_QUERYCAP, &capability) == -1) return -1;
    uint32_t caps = (capability.capabilities & V4L2_CAP_DEVICE_CAPS) ? capability.device_caps : capability.capabilities;
    struct v4l2_exportbuffer request = {0};
    request.type = (caps & V4L2_CAP_VIDEO_CAPTURE) ? V4L2_BUF_TYPE_VIDEO_CAPTURE : V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE;
    request.index = index;
    request.plane = 0;
    request.flags = O_RDONLY | O_CLOEXEC;
    if (raw_ioctl(fd, VIDIOC_EXPBUF, &request) == -1) return -1;
    return request.fd;
}

const unsigned long CV4L2_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long CV4L2_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long CV4L2_VIDIOC_G_FMT = VIDIOC_G_FMT;
const unsigned long CV4L2_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long CV4L2_VIDIOC_G_PARM = VIDIOC_G_PARM;
const unsigned long CV4L2_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long CV4L2_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long CV4L2_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long CV4L2_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long CV4L2_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long CV4L2_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long CV4L2_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
const unsigned long CV4L2_VIDIOC_QUERY_EXT_CTRL = VIDIOC_QUERY_EXT_CTRL;
const unsigned long CV4L2_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;
const unsigned long CV4L2_VIDIOC_G_EXT_CTRLS = VIDIOC_G_EXT_CTRLS;
const unsigned long CV4L2_VIDIOC_S_EXT_CTRLS = VIDIOC_S_EXT_CTRLS;

uint32_t CV4L2_control_class(uint32_t id) { return V4L2_CTRL_ID2CLASS(id); }
