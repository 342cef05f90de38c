// libexif 0.6 (Debian 12): building and parsing EXIF blocks.
#include <libexif/exif-data.h>
#include <libexif/exif-entry.h>
#include <libexif/exif-utils.h>
