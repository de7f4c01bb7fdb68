/* progress.c - the one-line progress display of long compiles.
 *
 * With stderr a terminal (and not -q, not TERM=dumb), a compile that has run
 * for 2 s or more shows what it is doing on one line, redrawn in place: the
 * pass, the kernels emitted so far, the C compiler at work. The line is
 * cleared when the compile ends, so nothing stays on screen and logs and
 * pipes (no terminal) never see it. The passes and the emitter report
 * through callbacks (PipelineOpts.progress, CodegenOpts.progress) that take
 * the Progress as their user pointer, so the state is the driver's, not a
 * global.
 */
#include "tools.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SHOW_AFTER_S 2.0  /* quick compiles show nothing */
#define REDRAW_S 0.1      /* at most ten redraws a second */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void progress_init(Progress *p, bool quiet) {
  memset(p, 0, sizeof *p);
  const char *term = getenv("TERM");
  p->on = !quiet && isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
  p->t0 = now_s();
  p->last = -1;
  /* ONNXC_PROGRESS_AFTER=SECONDS moves the 2 s threshold (0: from the start; the test uses it) */
  const char *after = getenv("ONNXC_PROGRESS_AFTER");
  p->after = after && *after ? atof(after) : SHOW_AFTER_S;
}

void progress_show(Progress *p, const char *what, long done, long total) {
  if (!p || !p->on)
    return;
  if (what != p->what)
    snprintf(p->what, sizeof p->what, "%s", what);
  p->done = done;
  p->total = total;
  double t = now_s();
  if (t - p->t0 < p->after || (p->last >= 0 && t - p->last < REDRAW_S && done != total))
    return;
  p->last = t;
  char line[640]; /* the stage (128) and the figures, whatever their size */
  if (total > 0)
    snprintf(line, sizeof line, "onnxc: [%.1f s] %s %ld/%ld", t - p->t0, what, done, total);
  else
    snprintf(line, sizeof line, "onnxc: [%.1f s] %s", t - p->t0, what);
  fprintf(stderr, "\r%s\033[K", line); /* carriage return, the line, erase the rest */
  fflush(stderr);
  p->shown = true;
}

void progress_pass(void *user, const char *pass, int index, int count) {
  char what[96];
  snprintf(what, sizeof what, "pass %s", pass);
  progress_show(user, what, index + 1, count);
}

void progress_kernels(void *user, long done, long total) {
  progress_show(user, "emitting kernels", done, total);
}

void progress_tick(void *user) {
  Progress *p = user;
  if (p && p->on && p->what[0])
    progress_show(p, p->what, p->done, p->total);
}

void progress_end(Progress *p) {
  if (p && p->on && p->shown) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  if (p)
    p->shown = false;
}
