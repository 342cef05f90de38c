// libasound (ALSA's user-space library): capture PCMs, control interfaces, card enumeration.
#include <alsa/asoundlib.h>

// libasound prints its errors to stderr unless given a handler, which is variadic
// (Swift cannot write one): this one drops them; camerad reports the errors the
// calls return itself.
static void calsa_drop_error(const char *file, int line, const char *function, int err, const char *format, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)format;
}

static inline void calsa_silence_errors(void) { snd_lib_error_set_handler(calsa_drop_error); }
