/* main.c - runs an onnxc-compiled model on embedded inputs and prints its outputs.
 *
 * fw_data.h and fw_data.c are written by gen_data.py: they include the model's
 * header, name its entry point (FW_RUN_V, the NAME_run_v of the generated ABI)
 * and hold the input sets as const arrays and the output buffers. The arena is
 * a static buffer of exactly NAME_ARENA_BYTES, aligned to 64 as the ABI asks.
 *
 * Output is plain text built here without printf:
 *   out SET OUTPUT DTYPE NUMEL     then the elements as hex bit patterns,
 *   = xxxxxxxx xxxxxxxx ...        8 per line (exact, whatever the libm)
 *   argmax SET OUTPUT K            for float outputs, for people reading along
 *   stack USED of SIZE bytes       high-water mark of the painted stack
 * compare.py reads this format back. The same file builds for the host with
 * host.c, which is how the test gets the reference output.
 */
#include <stdint.h>

#include "board.h"
#include "fw_data.h"

#ifdef FW_ARENA_SECTION
#define FW_ARENA_ATTRS __attribute__((aligned(64), section(FW_ARENA_SECTION)))
#else
#define FW_ARENA_ATTRS __attribute__((aligned(64)))
#endif

static unsigned char arena[FW_ARENA_BYTES > 0 ? FW_ARENA_BYTES : 1] FW_ARENA_ATTRS;

/* ---- a line-buffered console with just the formatting needed ------------- */

static char line[128];
static unsigned line_len;

static void put_char(char c) {
  line[line_len++] = c;
  if (c == '\n' || line_len == sizeof line - 1) {
    line[line_len] = 0;
    board_puts(line);
    line_len = 0;
  }
}

static void put_str(const char *s) {
  while (*s)
    put_char(*s++);
}

static void put_dec(unsigned long v) {
  char digits[24];
  int n = 0;
  do
    digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0)
    put_char(digits[--n]);
}

/* The bit pattern of one element, most significant byte first. */
static void put_hex(const unsigned char *p, unsigned size) {
  const uint16_t one = 1;
  const int little = *(const unsigned char *)&one;
  for (unsigned i = 0; i < size; i++) {
    unsigned char b = p[little ? size - 1 - i : i];
    put_char("0123456789abcdef"[b >> 4]);
    put_char("0123456789abcdef"[b & 15]);
  }
}

static int is_dtype(const char *a, const char *b) {
  while (*a && *a == *b)
    a++, b++;
  return *a == *b;
}

/* Index of the largest element of an f32 output; -1 for other types. (Single
 * precision only: a double compare would pull in soft-float routines on an
 * FPU that does single precision only.) */
static long argmax(const FwOutput *o, const void *data) {
  if (o->numel == 0 || !is_dtype(o->dtype, "f32"))
    return -1;
  const float *x = (const float *)data;
  unsigned long best = 0;
  for (unsigned long i = 1; i < o->numel; i++)
    if (x[i] > x[best])
      best = i;
  return (long)best;
}

static void print_output(unsigned set, unsigned k) {
  const FwOutput *o = &fw_output_info[k];
  const unsigned char *p = (const unsigned char *)fw_outputs[k];
  put_str("out ");
  put_dec(set);
  put_char(' ');
  put_dec(k);
  put_char(' ');
  put_str(o->dtype);
  put_char(' ');
  put_dec(o->numel);
  put_char('\n');
  for (unsigned long i = 0; i < o->numel; i++) {
    put_str(i % 8 == 0 ? "= " : " ");
    put_hex(p + i * o->elem_bytes, o->elem_bytes);
    if (i % 8 == 7 || i + 1 == o->numel)
      put_char('\n');
  }
  long best = argmax(o, p);
  if (best >= 0) {
    put_str("argmax ");
    put_dec(set);
    put_char(' ');
    put_dec(k);
    put_char(' ');
    put_dec((unsigned long)best);
    put_char('\n');
  }
}

int main(void) {
  put_str("onnxc firmware: model " FW_MODEL ", arena ");
  put_dec(FW_ARENA_BYTES);
  put_str(" bytes, ");
  put_dec(FW_NUM_SETS);
  put_str(" input sets\n");
  for (unsigned s = 0; s < FW_NUM_SETS; s++) {
    int rc = FW_RUN_V(arena, fw_inputs[s], fw_outputs);
    if (rc != 0) {
      put_str("run failed: set ");
      put_dec(s);
      put_str(", status ");
      put_dec((unsigned long)rc);
      put_char('\n');
      return 1;
    }
    for (unsigned k = 0; k < FW_NUM_OUTPUTS; k++)
      print_output(s, k);
  }
  if (board_stack_size() > 0) {
    put_str("stack ");
    put_dec(board_stack_used());
    put_str(" of ");
    put_dec(board_stack_size());
    put_str(" bytes used\n");
  }
  put_str("done\n");
  return 0;
}
