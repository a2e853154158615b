/* run_delegate: load an etvk delegate blob through the C ABI (etvk.h only), run it on one
 * or more cases and compare the outputs with expected files.
 *
 * usage: run_delegate BLOB NAMED_DATA_DIR [--atol A] [--rtol R] [--spec KEY=VALUE]...
 *                     (--case (--in T) ... (--out T) ...) ...
 *   T = DTYPE:SHAPE:FILE, DTYPE in float32 float64 float16 int8 uint8 int16 int32 int64 bool,
 *       SHAPE = comma-separated sizes ("4,64"; empty for a scalar), FILE raw little-endian.
 *   NAMED_DATA_DIR holds the program's named data as <key>.bin.
 *   --spec passes one of the program's compile specs: VALUE is raw text, or the value's bytes
 *       in hex after "0x" (exporters serialize flags as bytes: require_dynamic_shapes=0x01).
 * One init, one execute per --case; each case's inputs carry their own sizes (a program with
 * dynamic shapes resizes between cases). Exit 0 when every output matches within
 * |got - want| <= atol + rtol * |want|, 1 on a mismatch, 2 on an error. */
#include "etvk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 64
#define MAX_CASES 64
#define MAX_SPECS 16
#define MAX_SPEC_BYTES 64

/* A tensor argument; for outputs `want` holds the expected bytes (`t.nbytes` of them). */
typedef struct { EtvkTensor t; const char *file; void *want; } Arg;
typedef struct { Arg in[MAX_ARGS], out[MAX_ARGS]; int n_in, n_out; } Case;
/* Named data files loaded during init; freed once init returns. */
typedef struct { const char *dir; void *bufs[1024]; int n; } Lookup;

static void die(const char *what) {
  fprintf(stderr, "run_delegate: %s\n", what);
  exit(2);
}

static void *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  long n;
  void *buf;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static int dtype_of(const char *s, size_t n, size_t *elem) {
  static const struct { const char *name; int code; size_t size; } table[] = {
      {"float32", ETVK_DTYPE_FLOAT, 4}, {"float64", ETVK_DTYPE_DOUBLE, 8},
      {"float16", ETVK_DTYPE_HALF, 2},  {"int8", ETVK_DTYPE_CHAR, 1},
      {"uint8", ETVK_DTYPE_BYTE, 1},    {"int16", ETVK_DTYPE_SHORT, 2},
      {"int32", ETVK_DTYPE_INT, 4},     {"int64", ETVK_DTYPE_LONG, 8},
      {"bool", ETVK_DTYPE_BOOL, 1}};
  size_t i;
  for (i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strlen(table[i].name) == n && strncmp(s, table[i].name, n) == 0) {
      *elem = table[i].size;
      return table[i].code;
    }
  return -1;
}

/* Parse DTYPE:SHAPE:FILE; inputs get their bytes loaded, outputs a buffer of the file's size. */
static void parse_arg(char *spec, int is_input, Arg *a) {
  char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *p;
  size_t elem = 0, numel = 1, len = 0;
  void *data;
  if (!c2) die("a tensor must be DTYPE:SHAPE:FILE");
  memset(a, 0, sizeof *a);
  a->t.dtype = dtype_of(spec, (size_t)(c1 - spec), &elem);
  if (a->t.dtype < 0) die("unknown dtype");
  for (p = c1 + 1; p < c2;) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || a->t.ndim >= ETVK_MAX_DIMS) die("bad shape");
    a->t.sizes[a->t.ndim++] = v;
    numel *= (size_t)v;
    p = (*end == ',') ? end + 1 : end;
    if (p < c2 && *end != ',') die("bad shape");
  }
  a->file = c2 + 1;
  data = read_file(a->file, &len);
  if (!data) {
    fprintf(stderr, "run_delegate: cannot read %s\n", a->file);
    exit(2);
  }
  if (len != numel * elem) {
    fprintf(stderr, "run_delegate: %s has %lu bytes, its shape needs %lu\n", a->file,
            (unsigned long)len, (unsigned long)(numel * elem));
    exit(2);
  }
  if (is_input) {
    a->t.data = data;
  } else {
    a->want = data;
    a->t.data = calloc(len + 1, 1); /* etvk writes the produced bytes here */
    if (!a->t.data) die("out of memory");
  }
  a->t.nbytes = len;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Parse KEY=VALUE into `cs`; hex values are decoded into `buf`. */
static void parse_spec(char *s, EtvkCompileSpec *cs, uint8_t buf[MAX_SPEC_BYTES]) {
  char *eq = strchr(s, '='), *v;
  size_t n = 0;
  if (!eq) die("--spec needs KEY=VALUE");
  *eq = '\0';
  v = eq + 1;
  cs->key = s;
  if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    for (v += 2; *v; v += 2) {
      int hi = hex_digit(v[0]), lo = v[1] ? hex_digit(v[1]) : -1;
      if (hi < 0 || lo < 0 || n == MAX_SPEC_BYTES) die("bad hex --spec value");
      buf[n++] = (uint8_t)(hi * 16 + lo);
    }
    cs->value = buf;
  } else {
    n = strlen(v);
    cs->value = (const uint8_t *)v;
  }
  cs->value_len = n;
}

static int32_t lookup_cb(void *user, const char *key, size_t key_len, const uint8_t **data,
                         size_t *len) {
  Lookup *l = (Lookup *)user;
  char path[4096];
  size_t i;
  void *buf;
  for (i = 0; i < key_len; i++)
    if (key[i] == '/' || key[i] == '\0') return 1; /* keys are file names here */
  if (key_len == 0 || key[0] == '.' || l->n >= 1024) return 1;
  if (strlen(l->dir) + key_len + 6 > sizeof path) return 1;
  sprintf(path, "%s/%.*s.bin", l->dir, (int)key_len, key);
  buf = read_file(path, len);
  if (!buf) return 1;
  l->bufs[l->n++] = buf;
  *data = (const uint8_t *)buf;
  return 0;
}

static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double element(const EtvkTensor *t, const void *base, size_t i) {
  const unsigned char *p = (const unsigned char *)base;
  switch (t->dtype) {
    case ETVK_DTYPE_FLOAT: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case ETVK_DTYPE_DOUBLE: { double v; memcpy(&v, p + 8 * i, 8); return v; }
    case ETVK_DTYPE_HALF: { uint16_t v; memcpy(&v, p + 2 * i, 2); return half_to_double(v); }
    case ETVK_DTYPE_CHAR: return (signed char)p[i];
    case ETVK_DTYPE_SHORT: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case ETVK_DTYPE_INT: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case ETVK_DTYPE_LONG: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    default: return p[i];
  }
}

/* Compare one produced output with its expectation; returns 0 when it matches. */
static int check(int c, int k, const Arg *a, const EtvkTensor *got, double atol, double rtol) {
  size_t n = 1, i, want_ndim = a->t.ndim;
  double max_abs = 0.0, max_rel = 0.0;
  int bad = 0;
  for (i = 0; i < got->ndim; i++) n *= (size_t)got->sizes[i];
  if (got->ndim != want_ndim || memcmp(got->sizes, a->t.sizes, sizeof(int64_t) * want_ndim)) {
    printf("case %d out %d: produced shape differs from %s\n", c, k, a->file);
    return 1;
  }
  for (i = 0; i < n; i++) {
    double g = element(got, got->data, i), w = element(got, a->want, i);
    double err = fabs(g - w);
    if (isnan(g) && isnan(w)) continue;
    if (!(err <= atol + rtol * fabs(w))) bad++;
    if (!(err <= max_abs)) max_abs = err;
    if (w != 0.0 && err / fabs(w) > max_rel) max_rel = err / fabs(w);
  }
  printf("case %d out %d: %lu elements, max abs err %.3g, max rel err %.3g, %d mismatches\n", c,
         k, (unsigned long)n, max_abs, max_rel, bad);
  return bad != 0;
}

int main(int argc, char **argv) {
  static Case cases[MAX_CASES];
  EtvkCompileSpec specs[MAX_SPECS];
  static uint8_t spec_bytes[MAX_SPECS][MAX_SPEC_BYTES];
  int n_cases = 0, n_specs = 0, i, c, failed = 0;
  double atol = 1e-3, rtol = 1e-3;
  Lookup lookup;
  EtvkBackend *backend = NULL;
  EtvkDelegate *delegate = NULL;
  size_t blob_len = 0;
  void *blob;

  if (argc < 3) {
    fprintf(stderr, "usage: %s BLOB NAMED_DATA_DIR [--atol A] [--rtol R] [--spec K=V]... "
                    "(--case (--in DTYPE:SHAPE:FILE)... (--out DTYPE:SHAPE:FILE)...)...\n",
            argv[0]);
    return 2;
  }
  if (etvk_abi_version() != ETVK_ABI_VERSION) die("libetvk ABI version mismatch");
  for (i = 3; i < argc; i++) {
    Case *cs = n_cases ? &cases[n_cases - 1] : NULL;
    if (!strcmp(argv[i], "--case")) {
      if (n_cases == MAX_CASES) die("too many cases");
      n_cases++;
    } else if (i + 1 >= argc) {
      die("option without a value");
    } else if (!strcmp(argv[i], "--atol")) {
      atol = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--rtol")) {
      rtol = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--spec")) {
      if (n_specs == MAX_SPECS) die("too many --spec");
      parse_spec(argv[++i], &specs[n_specs], spec_bytes[n_specs]);
      n_specs++;
    } else if (!cs) {
      die("--in/--out before the first --case");
    } else if (!strcmp(argv[i], "--in") && cs->n_in < MAX_ARGS) {
      parse_arg(argv[++i], 1, &cs->in[cs->n_in++]);
    } else if (!strcmp(argv[i], "--out") && cs->n_out < MAX_ARGS) {
      parse_arg(argv[++i], 0, &cs->out[cs->n_out++]);
    } else {
      fprintf(stderr, "run_delegate: unexpected argument %s\n", argv[i]);
      return 2;
    }
  }

  blob = read_file(argv[1], &blob_len);
  if (!blob) die("cannot read the delegate blob");
  lookup.dir = argv[2];
  lookup.n = 0;
  if (etvk_backend_create(&backend) != ETVK_STATUS_OK) {
    fprintf(stderr, "run_delegate: %s\n", etvk_last_error());
    return 2;
  }
  if (etvk_delegate_init(backend, (const uint8_t *)blob, blob_len, specs, (size_t)n_specs,
                         lookup_cb, &lookup, &delegate) != ETVK_STATUS_OK) {
    fprintf(stderr, "run_delegate: %s\n", etvk_last_error());
    return 2;
  }
  for (i = 0; i < lookup.n; i++) free(lookup.bufs[i]);
  free(blob);
  /* The delegate keeps the device alive; the backend handle is no longer needed. */
  if (etvk_backend_destroy(backend) != ETVK_STATUS_OK) die(etvk_last_error());

  for (c = 0; c < n_cases; c++) {
    Case *cs = &cases[c];
    EtvkArg args[2 * MAX_ARGS];
    int n = 0, k;
    memset(args, 0, sizeof args);
    for (k = 0; k < cs->n_in; k++, n++) {
      args[n].kind = ETVK_ARG_TENSOR;
      args[n].tensor = cs->in[k].t;
    }
    for (k = 0; k < cs->n_out; k++, n++) {
      args[n].kind = ETVK_ARG_TENSOR;
      args[n].tensor = cs->out[k].t;
      /* etvk reports the produced shape: clear it to show that. */
      args[n].tensor.ndim = 0;
      memset(args[n].tensor.sizes, 0, sizeof args[n].tensor.sizes);
    }
    if (etvk_delegate_execute(delegate, args, (size_t)n) != ETVK_STATUS_OK) {
      fprintf(stderr, "run_delegate: case %d: %s\n", c, etvk_last_error());
      return 2;
    }
    for (k = 0; k < cs->n_out; k++)
      failed |= check(c, k, &cs->out[k], &args[cs->n_in + k].tensor, atol, rtol);
  }
  if (etvk_delegate_destroy(delegate) != ETVK_STATUS_OK) die(etvk_last_error());
  printf("%s: %d case(s)\n", failed ? "MISMATCH" : "OK", n_cases);
  return failed ? 1 : 0;
}
