// FFmpeg 5.1's encoders (libavcodec: libx264, the native AAC) and muxers
// (libavformat: mp4, mov), for CameraEncoding alone: no other target sees these types.
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/mathematics.h>
#include <libavutil/opt.h>
