/* A tiny non-allocating printf over armgen_console_write, and the snprintf/vsnprintf the bare-metal
 * link routes to it (see armgen_print.h). */
#include "armgen_print.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "armgen_platform.h"

#define ARMGEN_PRINT_CHUNK 96

/* Where formatted characters go: the console in chunks, or a bounded buffer. */
typedef struct {
  char* buf;
  size_t cap;   /* console: ARMGEN_PRINT_CHUNK; buffer: its size (0: count only) */
  size_t len;   /* characters produced so far (buffer) / in the chunk (console) */
  int console;
} sink_t;

static void flush(sink_t* o) {
  if (o->console && o->len) {
    o->buf[o->len] = '\0';
    armgen_console_write(o->buf);
    o->len = 0;
  }
}

static void put(sink_t* o, char c) {
  if (o->console) {
    if (o->len == o->cap) {
      flush(o);
    }
    o->buf[o->len++] = c;
  } else {
    if (o->len + 1 < o->cap) {
      o->buf[o->len] = c;
    }
    o->len++;
  }
}

static void put_uint(sink_t* o, unsigned long long v, unsigned base, int width, char pad, int negative) {
  char tmp[24];
  int n = 0;
  do {
    unsigned d = (unsigned)(v % base);
    tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
    v /= base;
  } while (v);
  if (negative) {
    if (pad == '0') {
      put(o, '-');
    } else {
      tmp[n++] = '-';
    }
    width--;
  }
  for (int i = n; i < width; ++i) {
    put(o, pad);
  }
  while (n) {
    put(o, tmp[--n]);
  }
}

static void format(sink_t* o, const char* fmt, va_list ap) {
  for (const char* p = fmt; *p; ++p) {
    if (*p != '%') {
      put(o, *p);
      continue;
    }
    ++p;
    char pad = ' ';
    int width = 0;
    if (*p == '0') {
      pad = '0';
      ++p;
    }
    while (*p >= '0' && *p <= '9') {
      width = width * 10 + (*p++ - '0');
    }
    int longs = 0;
    for (;; ++p) {
      if (*p == 'l') {
        ++longs;
      } else if (*p == 'z' || *p == 't') {
        longs = sizeof(size_t) > sizeof(unsigned) ? (sizeof(size_t) > sizeof(long) ? 2 : 1) : 0;
      } else if (*p != 'h') {
        break;
      }
    }
    switch (*p) {
      case 's': {
        const char* s = va_arg(ap, const char*);
        if (!s) {
          s = "(null)";
        }
        while (*s) {
          put(o, *s++);
        }
        break;
      }
      case 'c':
        put(o, (char)va_arg(ap, int));
        break;
      case 'd':
      case 'i': {
        long long v = longs >= 2 ? va_arg(ap, long long) : longs == 1 ? va_arg(ap, long) : va_arg(ap, int);
        unsigned long long mag = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        put_uint(o, mag, 10, width, pad, v < 0);
        break;
      }
      case 'u':
      case 'x':
      case 'X': {
        unsigned long long v = longs >= 2   ? va_arg(ap, unsigned long long)
                               : longs == 1 ? va_arg(ap, unsigned long)
                                            : va_arg(ap, unsigned);
        put_uint(o, v, *p == 'u' ? 10 : 16, width, pad, 0);
        break;
      }
      case 'p':
        put(o, '0');
        put(o, 'x');
        put_uint(o, (uintptr_t)va_arg(ap, void*), 16, 8, '0', 0);
        break;
      case '%':
        put(o, '%');
        break;
      case '\0':
        --p;
        break;
      default: /* e.g. %f: not supported, echoed as written */
        put(o, '%');
        put(o, *p);
        break;
    }
  }
}

void armgen_printf(const char* fmt, ...) {
  char chunk[ARMGEN_PRINT_CHUNK + 1];
  sink_t o = {chunk, ARMGEN_PRINT_CHUNK, 0, 1};
  va_list ap;
  va_start(ap, fmt);
  format(&o, fmt, ap);
  va_end(ap);
  flush(&o);
}

int armgen_vsnprintf(char* buf, size_t size, const char* fmt, va_list ap) {
  sink_t o = {buf, size, 0, 0};
  format(&o, fmt, ap);
  if (size) {
    buf[o.len < size ? o.len : size - 1] = '\0';
  }
  return (int)o.len;
}

/* Link-time replacements (bare metal: -Wl,--wrap=snprintf -Wl,--wrap=vsnprintf). */
int __wrap_vsnprintf(char* buf, size_t size, const char* fmt, va_list ap);
int __wrap_snprintf(char* buf, size_t size, const char* fmt, ...);

int __wrap_vsnprintf(char* buf, size_t size, const char* fmt, va_list ap) {
  return armgen_vsnprintf(buf, size, fmt, ap);
}

int __wrap_snprintf(char* buf, size_t size, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = armgen_vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}
