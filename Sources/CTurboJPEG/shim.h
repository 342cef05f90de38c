// libturbojpeg 2.1 (Debian 12): only the tjCompress2/tjDecompress2 API, no tj3.
#include <turbojpeg.h>
