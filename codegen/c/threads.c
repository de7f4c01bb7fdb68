/* threads.c - --threads: the pool NAME.c carries, and how a kernel decides
 * whether to use it and how finely to cut its work.
 *
 * The pool (pool_text, below) is generated text: N - 1 workers that spin on a
 * generation counter, with a pause instruction, while a run is in progress
 * (up to ONNXC_SPIN_RUN_US between two parallel nodes) and briefly after it,
 * then sleep on a condition variable. Work is cut into items claimed from a
 * shared counter (docs/threads.md).
 *
 * Whether a kernel runs on the pool is decided by its estimated cost, not by
 * its size alone: ec_cost_ns turns multiply-adds, bytes and elements into
 * nanoseconds on one thread at rates measured on the build machine, and a
 * kernel goes parallel only when that is several times what a parallel node
 * costs over a sequential one (the wake-up and join, measured the same way).
 * Claims are made coarse enough that the shared counter's cache line does not
 * bounce per element, and fine enough that the threads finish together.
 */
#include "codegen_internal.h"
#include "gemm.h"

/* Picoseconds per unit of work on one thread of the 2-core AVX-512 build
 * machine (onnxc profile --threads 1 on the corpus, docs/threads.md), by
 * CostKind: a packed GEMM multiply-add (BERT-tiny's dense layers), a
 * depthwise or pooling tap (MobileNetV2's 3x3 depthwise convs), an element
 * of a row kernel (Softmax, LayerNormalization: exp, two passes), an element
 * of an elementwise loop, a byte moved (memory copy rate). */
static const double cost_ps[] = {16.0, 110.0, 1100.0, 140.0, 120.0};

/* A parallel node's overhead over a sequential one with the workers spinning
 * (post, join, the last claim's imbalance): about 1-2 us; a kernel goes on
 * the pool from PAR_MIN_NS, so that the overhead stays under a fifth of it. */
#define PAR_MIN_NS 8000.0
/* One claim is an atomic add on a line both threads write: at least this much
 * work per claim keeps that under a few percent. */
#define CLAIM_MIN_NS 1500.0

double ec_cost(CostKind k, double units) { return units * cost_ps[k] / 1000.0; }

double ec_cost_ns(double macs, double bytes) {
  double c = ec_cost(COST_GEMM_MAC, macs), m = ec_cost(COST_BYTE, bytes);
  return c > m ? c : m;
}

int ec_threads(const EmitC *e) { return e->threads > 1 ? e->threads : 1; }
void ec_set_parallel(EmitC *e) { e->parallel = e->threads > 1; }

bool threads_worth(int threads, double cost_ns) { return threads > 1 && cost_ns >= PAR_MIN_NS; }
bool ec_par_worth(const EmitC *e, double cost_ns) { return threads_worth(ec_threads(e), cost_ns); }

int64_t threads_chunks(int threads, int64_t n, double cost_ns) {
  int64_t t = threads > 1 ? threads : 1, most = 8 * t, by_cost = (int64_t)(cost_ns / CLAIM_MIN_NS);
  int64_t c = by_cost < most ? by_cost : most;
  if (c < t)
    c = t;
  return c < n ? c : n;
}
int64_t ec_par_chunks(const EmitC *e, int64_t n, double cost_ns) {
  return threads_chunks(ec_threads(e), n, cost_ns);
}

void ec_open_items(EmitC *e, const char *var, int64_t n, double cost_ns) { ec_open_items_max(e, var, n, cost_ns, 0); }

void ec_open_items_max(EmitC *e, const char *var, int64_t n, double cost_ns, int64_t max_chunks) {
  if (!ec_par_worth(e, cost_ns) || n < 2) {
    ec_line(e, "for (long %s = 0; %s < %lld; %s++) {", var, var, (long long)n, var);
    e->items_end = arena_printf(e->g->arena, "%lld", (long long)n);
    return;
  }
  int64_t chunks = ec_par_chunks(e, n, cost_ns);
  if (max_chunks > 0 && chunks > max_chunks)
    chunks = max_chunks > ec_threads(e) ? max_chunks : ec_threads(e);
  e->items_end = arena_printf(e->g->arena, "(it + 1) * %lld / %lld", (long long)n, (long long)chunks);
  ec_set_parallel(e);
  ec_line(e, "long own = 0, it;");
  ec_line(e, "(void)own;");
  ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim() : own++) < %lld)", (long long)chunks);
  /* chunk it: items [it n / chunks, (it + 1) n / chunks), sizes within one */
  ec_line(e, "for (long %s = it * %lld / %lld; %s < (it + 1) * %lld / %lld; %s++) {", var, (long long)n,
          (long long)chunks, var, (long long)n, (long long)chunks, var);
}

const char *ec_par_when(EmitC *e, const char *units_c, CostKind k) {
  /* units of this kind that cost PAR_MIN_NS on one thread */
  double need = PAR_MIN_NS * 1000.0 / cost_ps[k];
  return arena_printf(e->g->arena, "(%s) >= %lld", units_c, (long long)need);
}

void ec_open_items_rt(EmitC *e, const char *var, const char *n_c, int64_t n_hi, double cost_hi,
                      const char *units_c, CostKind k) {
  if (!ec_par_worth(e, cost_hi) || n_hi < 2) {
    ec_line(e, "for (long %s = 0; %s < (long)(%s); %s++) {", var, var, n_c, var);
    return;
  }
  int64_t chunks = ec_par_chunks(e, n_hi, cost_hi);
  ec_set_parallel(e);
  e->par_when = ec_par_when(e, units_c, k);
  ec_line(e, "long own = 0, it;");
  ec_line(e, "const long n_rt = (long)(%s);", n_c);
  ec_line(e, "(void)own;");
  ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim() : own++) < %lld)", (long long)chunks);
  ec_line(e, "for (long %s = it * n_rt / %lld; %s < (it + 1) * n_rt / %lld; %s++) {", var, (long long)chunks, var,
          (long long)chunks, var);
}

void ec_open_rows(EmitC *e, int64_t outer, int64_t len) {
  ec_open_items(e, "o", outer, ec_cost(COST_ROW_ELEM, (double)outer * (double)len));
}

/* The pool. In parts: ISO C99 only promises string literals of 4095 characters. */
static const char *const pool_text[] = {
    "/* Thread pool (--threads, docs/threads.md): ONNXC_NT - 1 workers started by\n"
    " * the first parallel node. A node runs as a task on every thread; its work\n"
    " * is cut into items that the threads claim from a shared counter, so a\n"
    " * worker that wakes late (or is preempted) takes fewer and nobody waits for\n"
    " * it: a worker joins a task only while the caller still works on it, and the\n"
    " * caller waits only for workers that joined. Workers poll (with a pause)\n"
    " * while a run is in progress, up to ONNXC_SPIN_RUN_US between tasks, and\n"
    " * ONNXC_SPIN_US after it, then sleep. One NAME_run at a time uses the pool;\n"
    " * a concurrent run (another arena) runs its nodes on its own thread. */\n"
    "typedef void (*onnxc_task)(void *const *p, int th, int nt);\n"
    "#if defined(__GNUC__) && (defined(__unix__) || defined(__APPLE__)) && __STDC_HOSTED__ && \\\n"
    "    !defined(ONNXC_NO_THREADS)\n"
    "#include <pthread.h>\n"
    "#include <sched.h>\n"
    "#ifndef ONNXC_SPIN_US\n"
    "#define ONNXC_SPIN_US 100L /* polling after a run's last task (a -D may change it) */\n"
    "#endif\n"
    "#ifndef ONNXC_SPIN_RUN_US\n"
    "#define ONNXC_SPIN_RUN_US 300L /* between two tasks of a run */\n"
    "#endif\n"
    "#define ONNXC_YIELD_US 20L /* a wait longer than this yields the core at each poll */\n"
    "#define ONNXC_CLOSED 0x40000000\n"
    "#if defined(__x86_64__) || defined(__i386__)\n"
    "/* a poll with a pause (the other thread of an SMT core keeps its slots);\n"
    " * the TSC bounds the spin, counted at 2 GHz or faster */\n"
    "#define ONNXC_RELAX() __builtin_ia32_pause()\n"
    "#define ONNXC_T0() __builtin_ia32_rdtsc()\n"
    "#define ONNXC_SPUN(t0, s, us) ((void)(s), __builtin_ia32_rdtsc() - (t0) > (unsigned long long)(us) * 2000u)\n"
    "#elif defined(__aarch64__)\n"
    "#define ONNXC_RELAX() __asm__ __volatile__(\"yield\" ::: \"memory\")\n"
    "#define ONNXC_T0() 0ull\n"
    "#define ONNXC_SPUN(t0, s, us) ((void)(t0), (s) > (us) * 50L)\n"
    "#else\n"
    "#define ONNXC_RELAX() ((void)0)\n"
    "#define ONNXC_T0() 0ull\n"
    "#define ONNXC_SPUN(t0, s, us) ((void)(t0), (s) > (us) * 50L)\n"
    "#endif\n"
    "/* Fields written by different parties live on different cache lines. */\n"
    "static struct onnxc_pool_s {\n"
    "  pthread_mutex_t busy, mu;\n"
    "  pthread_cond_t cv;\n"
    "  onnxc_task fn;\n"
    "  void *const *p;\n"
    "  unsigned gen0;\n"
    "  int started, stop;\n"
    "  pthread_t t[ONNXC_NT - 1];\n"
    "  unsigned gen __attribute__((aligned(64))); /* a new task, polled by the workers */\n"
    "  int running;                               /* a run is in progress */\n"
    "  long next __attribute__((aligned(64)));    /* the task's next unclaimed item */\n"
    "  int ready;                                 /* its set-up items done */\n"
    "  int state __attribute__((aligned(64)));    /* workers in it, | ONNXC_CLOSED once the caller is done */\n"
    "  long part[ONNXC_NT * 8] __attribute__((aligned(64))); /* onnxc_claim_owned: one line per part */\n"
    "} onnxc_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,\n"
    "                0, 0, 0, 0, 0, {0}, 0, 0, 0, 0, 0, {0}};\n"
    "\n"
    "/* The next work item of the running task. */\n"
    "static inline long onnxc_claim(void) {\n"
    "  return __atomic_fetch_add(&onnxc_pool.next, 1L, __ATOMIC_RELAXED);\n"
    "}\n"
    ,
    "/* The next item of n cut into nt parts, part t owned by thread t: a thread\n"
    " * takes its own part's items first, then the others' (a worker that joins\n"
    " * late or not at all leaves its part to the rest). Kernels whose parts are\n"
    " * the same pixels from node to node read what the same thread just wrote. */\n"
    "static inline long onnxc_claim_owned(int th, int nt, long n) {\n"
    "  int k;\n"
    "  for (k = 0; k < nt; k++) {\n"
    "    const int r = (th + k) % nt;\n"
    "    const long lo = n * r / nt, hi = n * (r + 1) / nt;\n"
    "    long i;\n"
    "    if (lo + __atomic_load_n(&onnxc_pool.part[r * 8], __ATOMIC_RELAXED) >= hi)\n"
    "      continue;\n"
    "    i = lo + __atomic_fetch_add(&onnxc_pool.part[r * 8], 1L, __ATOMIC_RELAXED);\n"
    "    if (i < hi)\n"
    "      return i;\n"
    "  }\n"
    "  return n;\n"
    "}\n"
    "/* A task's first n items may build tables that its later items read: each\n"
    " * such item, once written, counts itself done, and a thread that claimed a\n"
    " * later item waits until all n are (every one of them was claimed by a\n"
    " * running thread, so the wait is short and cannot hang). */\n"
    "static inline void onnxc_ready_set(int nt) {\n"
    "  if (nt > 1)\n"
    "    __atomic_add_fetch(&onnxc_pool.ready, 1, __ATOMIC_RELEASE);\n"
    "}\n"
    "static inline void onnxc_ready_wait(int nt, int n) {\n"
    "  const unsigned long long t0 = ONNXC_T0();\n"
    "  long s = 0;\n"
    "  (void)t0;\n"
    "  while (nt > 1 && __atomic_load_n(&onnxc_pool.ready, __ATOMIC_ACQUIRE) < n) {\n"
    "    ONNXC_RELAX();\n"
    "    if (ONNXC_SPUN(t0, ++s, ONNXC_YIELD_US))\n"
    "      sched_yield(); /* the thread it waits for may want this core */\n"
    "  }\n"
    "}\n"
    "/* NAME_run's start and end: workers keep polling between its tasks. */\n"
    "static inline void onnxc_run_mark(int on) {\n"
    "  __atomic_store_n(&onnxc_pool.running, on, __ATOMIC_RELAXED);\n"
    "}\n",
    "\n"
    "static void *onnxc_worker(void *arg) {\n"
    "  const int th = (int)(size_t)arg;\n"
    "  unsigned seen = onnxc_pool.gen0, g;\n"
    "  for (;;) {\n"
    "    const unsigned long long t0 = ONNXC_T0();\n"
    "    long s = 0;\n"
    "    int st;\n"
    "    (void)t0;\n"
    "    while ((g = __atomic_load_n(&onnxc_pool.gen, __ATOMIC_ACQUIRE)) == seen) {\n"
    "      ONNXC_RELAX();\n"
    "      if ((++s & 1023) == 0)\n"
    "        sched_yield(); /* now and then: the caller may be waiting for this core */\n"
    "      if (ONNXC_SPUN(t0, s, __atomic_load_n(&onnxc_pool.running, __ATOMIC_RELAXED)\n"
    "                                ? ONNXC_SPIN_RUN_US : ONNXC_SPIN_US)) {\n"
    "        pthread_mutex_lock(&onnxc_pool.mu);\n"
    "        while (__atomic_load_n(&onnxc_pool.gen, __ATOMIC_ACQUIRE) == seen)\n"
    "          pthread_cond_wait(&onnxc_pool.cv, &onnxc_pool.mu);\n"
    "        pthread_mutex_unlock(&onnxc_pool.mu);\n"
    "      }\n"
    "    }\n"
    "    seen = g;\n"
    "    if (__atomic_load_n(&onnxc_pool.stop, __ATOMIC_ACQUIRE))\n"
    "      return (void *)0;\n"
    "    st = __atomic_load_n(&onnxc_pool.state, __ATOMIC_ACQUIRE);\n"
    "    while (!(st & ONNXC_CLOSED) &&\n"
    "           !__atomic_compare_exchange_n(&onnxc_pool.state, &st, st + 1, 0, __ATOMIC_ACQ_REL,\n"
    "                                        __ATOMIC_ACQUIRE))\n"
    "      ;\n"
    "    if (st & ONNXC_CLOSED)\n"
    "      continue; /* the caller finished it alone */\n"
    "    onnxc_pool.fn(onnxc_pool.p, th, ONNXC_NT);\n"
    "    __atomic_sub_fetch(&onnxc_pool.state, 1, __ATOMIC_ACQ_REL);\n"
    "  }\n"
    "}\n"
    "\n"
    "/* Wakes the workers (a new generation) and, with stop, joins the first n.\n"
    " * The mutex orders the new generation with a worker about to sleep. */\n"
    "static void onnxc_pool_post(int stop, int n) {\n"
    "  int i;\n"
    "  __atomic_store_n(&onnxc_pool.stop, stop, __ATOMIC_RELAXED);\n"
    "  pthread_mutex_lock(&onnxc_pool.mu);\n"
    "  __atomic_add_fetch(&onnxc_pool.gen, 1u, __ATOMIC_RELEASE);\n"
    "  pthread_cond_broadcast(&onnxc_pool.cv);\n"
    "  pthread_mutex_unlock(&onnxc_pool.mu);\n"
    "  for (i = 0; stop && i < n; i++)\n"
    "    pthread_join(onnxc_pool.t[i], (void **)0);\n"
    "  onnxc_pool.stop = 0;\n"
    "}\n",
    "\n"
    "static void onnxc_parallel(onnxc_task fn, void *const *p) {\n"
    "  unsigned long long t0;\n"
    "  long s = 0;\n"
    "  int i;\n"
    "  (void)onnxc_claim; /* not every model uses every helper */\n"
    "  (void)onnxc_claim_owned;\n"
    "  (void)onnxc_ready_set;\n"
    "  (void)onnxc_ready_wait;\n"
    "  (void)onnxc_run_mark;\n"
    "  if (pthread_mutex_trylock(&onnxc_pool.busy) != 0) {\n"
    "    fn(p, 0, 1);\n"
    "    return;\n"
    "  }\n"
    "  if (onnxc_pool.started == 0) {\n"
    "    onnxc_pool.gen0 = onnxc_pool.gen;\n"
    "    for (i = 0; i < ONNXC_NT - 1; i++)\n"
    "      if (pthread_create(&onnxc_pool.t[i], (const pthread_attr_t *)0, onnxc_worker,\n"
    "                         (void *)(size_t)(i + 1)) != 0)\n"
    "        break;\n"
    "    onnxc_pool.started = i == ONNXC_NT - 1 ? 1 : -1;\n"
    "    if (i < ONNXC_NT - 1)\n"
    "      onnxc_pool_post(1, i);\n"
    "  }\n"
    "  if (onnxc_pool.started < 0) {\n"
    "    pthread_mutex_unlock(&onnxc_pool.busy);\n"
    "    fn(p, 0, 1);\n"
    "    return;\n"
    "  }\n"
    "  onnxc_pool.fn = fn;\n"
    "  onnxc_pool.p = p;\n"
    "  onnxc_pool.next = 0;\n"
    "  onnxc_pool.ready = 0;\n"
    "  for (i = 0; i < ONNXC_NT; i++)\n"
    "    onnxc_pool.part[i * 8] = 0;\n"
    "  __atomic_store_n(&onnxc_pool.state, 0, __ATOMIC_RELEASE); /* after fn, p, next, ready */\n"
    "  onnxc_pool_post(0, 0);\n"
    "  fn(p, 0, ONNXC_NT);\n"
    "  __atomic_fetch_or(&onnxc_pool.state, ONNXC_CLOSED, __ATOMIC_ACQ_REL);\n"
    "  t0 = ONNXC_T0();\n"
    "  while (__atomic_load_n(&onnxc_pool.state, __ATOMIC_ACQUIRE) != ONNXC_CLOSED) {\n"
    "    ONNXC_RELAX();\n"
    "    if (ONNXC_SPUN(t0, ++s, ONNXC_YIELD_US))\n"
    "      sched_yield(); /* a worker preempted in its last item may want this core */\n"
    "  }\n"
    "  pthread_mutex_unlock(&onnxc_pool.busy);\n"
    "}\n"
    "\n"
    "ONNXC_API void ONNXC_FREE_THREADS(void) {\n"
    "  pthread_mutex_lock(&onnxc_pool.busy);\n"
    "  if (onnxc_pool.started > 0)\n"
    "    onnxc_pool_post(1, ONNXC_NT - 1);\n"
    "  onnxc_pool.started = 0;\n"
    "  pthread_mutex_unlock(&onnxc_pool.busy);\n"
    "}\n"
    "#else /* no threads: every node runs on the calling thread */\n"
    "static inline long onnxc_claim(void) { return 0; }\n"
    "static inline long onnxc_claim_owned(int th, int nt, long n) {\n"
    "  (void)th;\n"
    "  (void)nt;\n"
    "  (void)n;\n"
    "  return 0;\n"
    "}\n"
    "static inline void onnxc_ready_set(int nt) { (void)nt; }\n"
    "static inline void onnxc_ready_wait(int nt, int n) { (void)nt; (void)n; }\n"
    "static inline void onnxc_run_mark(int on) { (void)on; }\n"
    "static void onnxc_parallel(onnxc_task fn, void *const *p) {\n"
    "  (void)onnxc_claim;\n"
    "  (void)onnxc_claim_owned;\n"
    "  (void)onnxc_ready_set;\n"
    "  (void)onnxc_ready_wait;\n"
    "  (void)onnxc_run_mark;\n"
    "  fn(p, 0, 1);\n"
    "}\n"
    "ONNXC_API void ONNXC_FREE_THREADS(void) {}\n"
    "#endif\n"
    "\n",
    NULL};

void threads_write_pool(Buf *out, const char *name, int threads, bool pool) {
  buf_printf(out, "#define ONNXC_NT %d\n#define ONNXC_FREE_THREADS %s_free_threads\n", threads, name);
  if (!pool) {
    buf_puts(out, "ONNXC_API void ONNXC_FREE_THREADS(void) {}\n\n");
    return;
  }
  for (int i = 0; pool_text[i]; i++)
    buf_puts(out, pool_text[i]);
}
