// libjpeg's error handling for the decoders and the transcoder: libjpeg reports
// an error by calling error_exit, which must not return, so on_error long-jumps
// back to the phase function that set `jump`; and every warning (level -1, e.g.
// "premature end of data segment") is an error too, since libjpeg otherwise
// fills the rest of a damaged image with grey and carries on. Only plain C state
// may live in the frames between setjmp and longjmp.
#pragma once

#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

namespace seedloader {

struct JpegErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

inline void jpeg_on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

inline void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_on_error(cinfo);
}

// Points `err` at libjpeg's defaults with the two handlers above; returns what
// jpeg_std_error returns, for cinfo.err.
inline jpeg_error_mgr* jpeg_strict_errors(JpegErrorManager* err) {
  jpeg_error_mgr* pub = jpeg_std_error(&err->pub);
  err->pub.error_exit = jpeg_on_error;
  err->pub.emit_message = jpeg_on_message;
  err->message[0] = '\0';
  return pub;
}

}  // namespace seedloader
