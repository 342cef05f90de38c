// libswresample and the parts of libavutil it takes (FFmpeg 5.1: channel layouts, sample formats).
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
