/* sys.c - the few operating-system services the driver needs: temporary
 * folders, running the C compiler, whole-file reads and writes. POSIX only. */
#include "tools.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

char *sys_mkdtemp(const char *hint) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base)
    base = "/tmp";
  size_t n = strlen(base) + strlen(hint) + 32;
  char *p = malloc(n);
  if (!p)
    return NULL;
  snprintf(p, n, "%s/onnxc-%s-XXXXXX", base, hint);
  if (!mkdtemp(p)) {
    free(p);
    return NULL;
  }
  return p;
}

void sys_rmtree(const char *path) {
  DIR *dir = opendir(path);
  if (dir) {
    struct dirent *e;
    while ((e = readdir(dir))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      size_t n = strlen(path) + strlen(e->d_name) + 2;
      char *sub = malloc(n);
      if (!sub)
        break;
      snprintf(sub, n, "%s/%s", path, e->d_name);
      struct stat st;
      if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
        sys_rmtree(sub);
      else
        unlink(sub);
      free(sub);
    }
    closedir(dir);
  }
  rmdir(path);
}

int sys_run(char *const argv[], Buf *log) { return sys_run_ticking(argv, log, NULL, NULL); }

int sys_run_ticking(char *const argv[], Buf *log, void (*tick)(void *user), void *user) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  int fds[2] = {-1, -1};
  if (log) {
    if (pipe(fds) != 0)
      return -1;
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
  }
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (log)
    close(fds[1]);
  if (rc != 0) {
    if (log) {
      close(fds[0]);
      buf_printf(log, "cannot run %s: %s\n", argv[0], strerror(rc));
    }
    return -1;
  }
  if (log) {
    char tmp[4096];
    ssize_t k;
    for (;;) {
      if (tick) { /* a quiet child: tick four times a second */
        struct pollfd pf = {fds[0], POLLIN, 0};
        int r = poll(&pf, 1, 250);
        if (r == 0) {
          tick(user);
          continue;
        }
        if (r < 0 && errno == EINTR)
          continue;
      }
      k = read(fds[0], tmp, sizeof tmp);
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0)
        break;
      if (log->len < (1u << 20))
        buf_write(log, tmp, (size_t)k);
    }
    close(fds[0]);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return -1;
}

bool sys_read_file(const char *path, Buf *out) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return false;
  char tmp[65536];
  size_t k;
  while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
    buf_write(out, tmp, k);
  bool ok = !ferror(f);
  fclose(f);
  if (!out->s)
    buf_puts(out, "");
  return ok;
}

bool sys_write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return false;
  bool ok = fwrite(data, 1, n, f) == n;
  if (fclose(f) != 0)
    ok = false;
  return ok;
}

bool sys_copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb");
  if (!in)
    return false;
  FILE *out = fopen(to, "wb");
  if (!out) {
    fclose(in);
    return false;
  }
  char tmp[65536];
  size_t k;
  bool ok = true;
  while ((k = fread(tmp, 1, sizeof tmp, in)) > 0)
    if (fwrite(tmp, 1, k, out) != k)
      ok = false;
  if (ferror(in))
    ok = false;
  fclose(in);
  if (fclose(out) != 0)
    ok = false;
  struct stat st;
  if (ok && stat(from, &st) == 0)
    chmod(to, st.st_mode & 0777);
  return ok;
}

bool sys_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *sys_cc(void) {
  const char *cc = getenv("CC");
  return cc && *cc ? cc : "cc";
}
