// libyuv ships no pkg-config file. Its "ARGB" is B, G, R, A in memory.
#include <libyuv.h>
