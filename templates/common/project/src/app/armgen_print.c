/* A tiny non-allocating printf over armgen_console_write (see armgen_print.h). */
#include "armgen_print.h"

#include <stdarg.h>
#include <stdint.h>

#include "armgen_platform.h"

#define ARMGEN_PRINT_CHUNK 96

typedef struct {
  char buf[ARMGEN_PRINT_CHUNK + 1];
  unsigned len;
} out_t;

static void flush(out_t* o) {
  if (o->len) {
    o->buf[o->len] = '\0';
    armgen_console_write(o->buf);
    o->len = 0;
  }
}

static void put(out_t* o, char c) {
  if (o->len == ARMGEN_PRINT_CHUNK) {
    flush(o);
  }
  o->buf[o->len++] = c;
}

static void put_uint(out_t* o, unsigned long long v, unsigned base, int width, char pad, int negative) {
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

void armgen_printf(const char* fmt, ...) {
  out_t o;
  o.len = 0;
  va_list ap;
  va_start(ap, fmt);
  for (const char* p = fmt; *p; ++p) {
    if (*p != '%') {
      put(&o, *p);
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
    while (*p == 'l') {
      ++longs;
      ++p;
    }
    switch (*p) {
      case 's': {
        const char* s = va_arg(ap, const char*);
        if (!s) {
          s = "(null)";
        }
        while (*s) {
          put(&o, *s++);
        }
        break;
      }
      case 'c':
        put(&o, (char)va_arg(ap, int));
        break;
      case 'd':
      case 'i': {
        long long v = longs >= 2 ? va_arg(ap, long long) : longs == 1 ? va_arg(ap, long) : va_arg(ap, int);
        unsigned long long mag = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        put_uint(&o, mag, 10, width, pad, v < 0);
        break;
      }
      case 'u':
      case 'x': {
        unsigned long long v = longs >= 2   ? va_arg(ap, unsigned long long)
                               : longs == 1 ? va_arg(ap, unsigned long)
                                            : va_arg(ap, unsigned);
        put_uint(&o, v, *p == 'x' ? 16 : 10, width, pad, 0);
        break;
      }
      case 'p':
        put(&o, '0');
        put(&o, 'x');
        put_uint(&o, (uintptr_t)va_arg(ap, void*), 16, 8, '0', 0);
        break;
      case '%':
        put(&o, '%');
        break;
      case '\0':
        --p;
        break;
      default:
        put(&o, '%');
        put(&o, *p);
        break;
    }
  }
  va_end(ap);
  flush(&o);
}
