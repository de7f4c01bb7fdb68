/* onnxc_image.h - image decoding for the ImageDecoder operator.
 *
 * Included by generated code only when a model uses ImageDecoder. Decodes
 * BMP (uncompressed 24/32-bit and 8-bit palette), PNM (P5/P6, maxval 255),
 * TIFF (baseline, uncompressed, 8-bit gray/RGB/RGBA, either byte order), PNG
 * (8-bit, every colour type, not interlaced) and JPEG (baseline sequential
 * Huffman, 8-bit, 1 or 3 components, sampling up to 2x2, restart markers)
 * into an 8-bit image of the size the model declares, as RGB, BGR or
 * grayscale. JPEG follows libjpeg's default decoder bit for bit (integer
 * "islow" inverse DCT, "fancy" triangular chroma upsampling, fixed-point
 * YCbCr conversion); RGB to grayscale is ITU-R 601 luma in 16-bit fixed
 * point, as Pillow computes it. WebP: lossy (VP8 key frame) and lossless
 * (VP8L), simple or extended (VP8X, alpha dropped; animation unsupported),
 * bit for bit as libwebp decodes to RGB (fancy upsampling). JPEG 2000 (JP2
 * or raw codestream, reversible 5/3 wavelet) is decoded by onnxc_j2k.h.
 * Progressive JPEG, 16-bit PNG, compressed TIFF and irreversible (9/7)
 * JPEG 2000 return ONNXC_ERR_UNSUPPORTED; malformed data and a size other
 * than the declared one return ONNXC_ERR_BAD_IMAGE.
 *
 * No allocation: the caller passes scratch of ONNXC_IMAGE_SCRATCH(h, w, n)
 * bytes. No recursion; all loops are bounded by the input length or the
 * declared size, so corrupt input cannot read or write out of bounds.
 */
#ifndef ONNXC_IMAGE_H
#define ONNXC_IMAGE_H

#include "onnxc_rt.h"
#include "onnxc_j2k.h"

/* Scratch for an image of h x w from n encoded bytes: PNG's inflated rows
 * (at most 4 channels) plus the gathered compressed stream, or JPEG's
 * component planes padded to whole MCUs; or JPEG 2000's (onnxc_j2k.h).
 * WebP lossy needs 1.5 bytes a pixel of macroblock-padded planes (within
 * JPEG's term); lossless about 7 bytes a pixel plus its prefix codes, which
 * take what is left (within the JPEG 2000 term; it checks and returns
 * ONNXC_ERR_UNSUPPORTED when they do not fit). */
#define ONNXC_IMAGE_SCRATCH(h, w, n)                                                          \
  (ONNXC_IMAGE_SCRATCH_PJ(h, w, n) > ONNXC_J2K_SCRATCH(h, w, n) ? ONNXC_IMAGE_SCRATCH_PJ(h, w, n) \
                                                                 : ONNXC_J2K_SCRATCH(h, w, n))
#define ONNXC_IMAGE_SCRATCH_PJ(h, w, n)                                                      \
  ((size_t)((h) * (4 * (w) + 1) + (n) > 3 * ((w) + 16) * ((h) + 16) ? (h) * (4 * (w) + 1) + (n) \
                                                                    : 3 * ((w) + 16) * ((h) + 16)) + 64)

/* Output pixel formats. */
enum { ONNXC_PIX_RGB = 0, ONNXC_PIX_BGR = 1, ONNXC_PIX_GRAY = 2 };

typedef struct onnxc_img_out {
  uint8_t *px;      /* h * w * (gray ? 1 : 3) */
  long h, w;
  int fmt;
} onnxc_img_out;

/* Stores pixel (y, x) given as r, g, b (gray sources pass r = g = b). */
static void onnxc_img_put(const onnxc_img_out *o, long y, long x, int r, int g, int b) {
  if (o->fmt == ONNXC_PIX_GRAY) {
    o->px[y * o->w + x] = (uint8_t)((r * 19595L + g * 38470L + b * 7471L + 0x8000L) >> 16);
    return;
  }
  uint8_t *p = o->px + (y * o->w + x) * 3;
  p[0] = (uint8_t)(o->fmt == ONNXC_PIX_BGR ? b : r);
  p[1] = (uint8_t)g;
  p[2] = (uint8_t)(o->fmt == ONNXC_PIX_BGR ? r : b);
}

static void onnxc_img_put_gray(const onnxc_img_out *o, long y, long x, int v) {
  if (o->fmt == ONNXC_PIX_GRAY)
    o->px[y * o->w + x] = (uint8_t)v;
  else
    onnxc_img_put(o, y, x, v, v, v);
}

static int onnxc_img_eq(const uint8_t *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != (uint8_t)b[i])
      return 0;
  return 1;
}

static uint32_t onnxc_le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t onnxc_le32(const uint8_t *p) { return onnxc_le16(p) | onnxc_le16(p + 2) << 16; }
static uint32_t onnxc_be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | (uint32_t)p[1]; }
static uint32_t onnxc_be32(const uint8_t *p) { return onnxc_be16(p) << 16 | onnxc_be16(p + 2); }

/* ---- BMP ------------------------------------------------------------------ */

static int onnxc_bmp(const uint8_t *d, size_t n, const onnxc_img_out *o) {
  if (n < 54 || onnxc_le32(d + 14) < 40)
    return ONNXC_ERR_BAD_IMAGE;
  uint32_t off = onnxc_le32(d + 10), hdr = onnxc_le32(d + 14);
  long w = (long)(int32_t)onnxc_le32(d + 18), h = (long)(int32_t)onnxc_le32(d + 22);
  int bpp = (int)onnxc_le16(d + 28);
  uint32_t comp = onnxc_le32(d + 30), ncolors = onnxc_le32(d + 46);
  int top_down = h < 0;
  if (top_down)
    h = -h;
  if (w != o->w || h != o->h)
    return ONNXC_ERR_BAD_IMAGE;
  if (!((comp == 0 && (bpp == 24 || bpp == 32 || bpp == 8)) || (comp == 3 && bpp == 32)))
    return ONNXC_ERR_UNSUPPORTED;
  const uint8_t *pal = d + 14 + hdr;
  if (bpp == 8) {
    if (ncolors == 0)
      ncolors = 256;
    if (ncolors > 256 || (size_t)(14 + hdr) + 4u * ncolors > n)
      return ONNXC_ERR_BAD_IMAGE;
  }
  size_t stride = ((size_t)w * (size_t)bpp + 31) / 32 * 4;
  if (off > n || (n - off) / stride < (size_t)h)
    return ONNXC_ERR_BAD_IMAGE;
  for (long y = 0; y < h; y++) {
    const uint8_t *row = d + off + stride * (size_t)(top_down ? y : h - 1 - y);
    for (long x = 0; x < w; x++) {
      if (bpp == 8) {
        const uint8_t *c = pal + 4 * (size_t)(row[x] < ncolors ? row[x] : 0);
        onnxc_img_put(o, y, x, c[2], c[1], c[0]);
      } else {
        const uint8_t *c = row + (size_t)x * (size_t)(bpp / 8);
        onnxc_img_put(o, y, x, c[2], c[1], c[0]);
      }
    }
  }
  return ONNXC_OK;
}

/* ---- PNM (P5 gray, P6 RGB) ------------------------------------------------- */

static int onnxc_pnm_int(const uint8_t *d, size_t n, size_t *pos, long *v) {
  for (;;) {
    while (*pos < n && (d[*pos] == ' ' || d[*pos] == '\t' || d[*pos] == '\r' || d[*pos] == '\n'))
      (*pos)++;
    if (*pos < n && d[*pos] == '#') {
      while (*pos < n && d[*pos] != '\n')
        (*pos)++;
      continue;
    }
    break;
  }
  if (*pos >= n || d[*pos] < '0' || d[*pos] > '9')
    return 0;
  *v = 0;
  while (*pos < n && d[*pos] >= '0' && d[*pos] <= '9' && *v < 100000000L)
    *v = *v * 10 + (d[(*pos)++] - '0');
  return 1;
}

static int onnxc_pnm(const uint8_t *d, size_t n, const onnxc_img_out *o) {
  size_t pos = 2;
  long w, h, maxv;
  int ch = d[1] == '6' ? 3 : 1;
  if (!onnxc_pnm_int(d, n, &pos, &w) || !onnxc_pnm_int(d, n, &pos, &h) ||
      !onnxc_pnm_int(d, n, &pos, &maxv) || pos >= n)
    return ONNXC_ERR_BAD_IMAGE;
  pos++;   /* the single whitespace after maxval */
  if (maxv != 255)
    return ONNXC_ERR_UNSUPPORTED;
  if (w != o->w || h != o->h || (n - pos) / (size_t)ch / (size_t)(w ? w : 1) < (size_t)h)
    return ONNXC_ERR_BAD_IMAGE;
  const uint8_t *p = d + pos;
  for (long y = 0; y < h; y++)
    for (long x = 0; x < w; x++, p += ch) {
      if (ch == 3)
        onnxc_img_put(o, y, x, p[0], p[1], p[2]);
      else
        onnxc_img_put_gray(o, y, x, p[0]);
    }
  return ONNXC_OK;
}

/* ---- TIFF (baseline, uncompressed) ------------------------------------------- */

typedef struct onnxc_tiff {
  const uint8_t *d;
  size_t n;
  int be;
} onnxc_tiff;

static uint32_t onnxc_t16(const onnxc_tiff *t, size_t at) {
  return at + 2 > t->n ? 0 : t->be ? onnxc_be16(t->d + at) : onnxc_le16(t->d + at);
}
static uint32_t onnxc_t32(const onnxc_tiff *t, size_t at) {
  return at + 4 > t->n ? 0 : t->be ? onnxc_be32(t->d + at) : onnxc_le32(t->d + at);
}

/* Value k of an IFD entry at e (SHORT or LONG, inline or at an offset). */
static uint32_t onnxc_tiff_val(const onnxc_tiff *t, size_t e, uint32_t k) {
  uint32_t type = onnxc_t16(t, e + 2), count = onnxc_t32(t, e + 4);
  size_t size = type == 3 ? 2 : 4;
  if (k >= count)
    return 0;
  size_t at = (size_t)count * size <= 4 ? e + 8 : (size_t)onnxc_t32(t, e + 8);
  at += (size_t)k * size;
  return type == 3 ? onnxc_t16(t, at) : onnxc_t32(t, at);
}

static int onnxc_tiff_decode(const uint8_t *d, size_t n, const onnxc_img_out *o) {
  onnxc_tiff t = {d, n, d[0] == 'M'};
  size_t ifd = onnxc_t32(&t, 4);
  uint32_t count = onnxc_t16(&t, ifd);
  if (ifd + 2 + 12u * count > n)
    return ONNXC_ERR_BAD_IMAGE;
  long w = 0, h = 0;
  uint32_t bits = 8, comp = 1, photo = 2, spp = 1, rps = 0xffffffffu, planar = 1;
  size_t e_off = 0, e_cnt = 0;
  for (uint32_t i = 0; i < count; i++) {
    size_t e = ifd + 2 + 12 * (size_t)i;
    switch (onnxc_t16(&t, e)) {
    case 256: w = (long)onnxc_tiff_val(&t, e, 0); break;
    case 257: h = (long)onnxc_tiff_val(&t, e, 0); break;
    case 258: bits = onnxc_tiff_val(&t, e, 0); break;
    case 259: comp = onnxc_tiff_val(&t, e, 0); break;
    case 262: photo = onnxc_tiff_val(&t, e, 0); break;
    case 273: e_off = e; break;
    case 277: spp = onnxc_tiff_val(&t, e, 0); break;
    case 278: rps = onnxc_tiff_val(&t, e, 0); break;
    case 279: e_cnt = e; break;
    case 284: planar = onnxc_tiff_val(&t, e, 0); break;
    default: break;
    }
  }
  if (w != o->w || h != o->h || !e_off)
    return ONNXC_ERR_BAD_IMAGE;
  if (comp != 1 || bits != 8 || planar != 1 || (photo != 1 && photo != 2) || spp < 1 || spp > 4)
    return ONNXC_ERR_UNSUPPORTED;
  (void)e_cnt;
  if (rps == 0 || rps > (uint32_t)h)
    rps = (uint32_t)h;
  size_t rowb = (size_t)w * spp;
  for (long y = 0; y < h; y++) {
    uint32_t strip = (uint32_t)y / rps;
    size_t at = (size_t)onnxc_tiff_val(&t, e_off, strip) + rowb * (size_t)((uint32_t)y % rps);
    if (at > n || n - at < rowb)
      return ONNXC_ERR_BAD_IMAGE;
    const uint8_t *p = d + at;
    for (long x = 0; x < w; x++, p += spp) {
      if (photo == 2 && spp >= 3)
        onnxc_img_put(o, y, x, p[0], p[1], p[2]);
      else
        onnxc_img_put_gray(o, y, x, p[0]);
    }
  }
  return ONNXC_OK;
}

/* ---- inflate (RFC 1951) for PNG --------------------------------------------- */

typedef struct onnxc_bits {
  const uint8_t *d;
  size_t n, pos;
  uint32_t acc;
  int cnt;
  int bad;
} onnxc_bits;

static uint32_t onnxc_getbits(onnxc_bits *b, int k) {
  while (b->cnt < k) {
    if (b->pos >= b->n) {
      b->bad = 1;
      return 0;
    }
    b->acc |= (uint32_t)b->d[b->pos++] << b->cnt;
    b->cnt += 8;
  }
  uint32_t v = b->acc & ((1u << k) - 1u);
  b->acc >>= k;
  b->cnt -= k;
  return v;
}

/* Canonical Huffman code: counts per length and symbols in code order. */
typedef struct onnxc_huff {
  uint16_t count[16];
  uint16_t sym[320];
} onnxc_huff;

static int onnxc_huff_build(onnxc_huff *h, const uint8_t *len, int n) {
  uint16_t offs[16];
  for (int i = 0; i < 16; i++)
    h->count[i] = 0;
  for (int i = 0; i < n; i++)
    h->count[len[i]]++;
  h->count[0] = 0;
  int left = 1;
  for (int i = 1; i < 16; i++) {
    left = left * 2 - h->count[i];
    if (left < 0)
      return 0;
  }
  offs[1] = 0;
  for (int i = 1; i < 15; i++)
    offs[i + 1] = (uint16_t)(offs[i] + h->count[i]);
  for (int i = 0; i < n; i++)
    if (len[i])
      h->sym[offs[len[i]]++] = (uint16_t)i;
  return 1;
}

static int onnxc_huff_decode(onnxc_bits *b, const onnxc_huff *h) {
  int code = 0, first = 0, index = 0;
  for (int len = 1; len < 16; len++) {
    code |= (int)onnxc_getbits(b, 1);
    int c = h->count[len];
    if (code - c < first)
      return h->sym[index + (code - first)];
    index += c;
    first = (first + c) << 1;
    code <<= 1;
    if (b->bad)
      return -1;
  }
  return -1;
}

static int onnxc_inflate(const uint8_t *src, size_t n, uint8_t *out, size_t cap, size_t *got) {
  static const uint16_t lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                     35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  static const uint8_t lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                   2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  static const uint16_t dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129,
                                     193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
                                     6145, 8193, 12289, 16385, 24577};
  static const uint8_t dext[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                   6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
  static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  onnxc_bits b = {src, n, 0, 0, 0, 0};
  onnxc_huff lit, dist;
  uint8_t lens[320];
  size_t o = 0;
  int last;
  do {
    last = (int)onnxc_getbits(&b, 1);
    uint32_t type = onnxc_getbits(&b, 2);
    if (b.bad || type == 3)
      return ONNXC_ERR_BAD_IMAGE;
    if (type == 0) {
      b.acc = 0;
      b.cnt = 0;
      if (b.pos + 4 > n)
        return ONNXC_ERR_BAD_IMAGE;
      uint32_t len = onnxc_le16(src + b.pos), nlen = onnxc_le16(src + b.pos + 2);
      b.pos += 4;
      if ((len ^ 0xffffu) != nlen || len > n - b.pos || len > cap - o)
        return ONNXC_ERR_BAD_IMAGE;
      for (uint32_t i = 0; i < len; i++)
        out[o++] = src[b.pos++];
      continue;
    }
    if (type == 1) {
      int i = 0;
      for (; i < 144; i++) lens[i] = 8;
      for (; i < 256; i++) lens[i] = 9;
      for (; i < 280; i++) lens[i] = 7;
      for (; i < 288; i++) lens[i] = 8;
      onnxc_huff_build(&lit, lens, 288);
      for (i = 0; i < 30; i++) lens[i] = 5;
      onnxc_huff_build(&dist, lens, 30);
    } else {
      int nlit = (int)onnxc_getbits(&b, 5) + 257, ndist = (int)onnxc_getbits(&b, 5) + 1;
      int ncode = (int)onnxc_getbits(&b, 4) + 4;
      if (nlit > 286 || ndist > 30)
        return ONNXC_ERR_BAD_IMAGE;
      for (int i = 0; i < 19; i++)
        lens[order[i]] = i < ncode ? (uint8_t)onnxc_getbits(&b, 3) : 0;
      onnxc_huff cl;
      if (!onnxc_huff_build(&cl, lens, 19))
        return ONNXC_ERR_BAD_IMAGE;
      int i = 0;
      while (i < nlit + ndist) {
        int s = onnxc_huff_decode(&b, &cl);
        if (s < 0)
          return ONNXC_ERR_BAD_IMAGE;
        if (s < 16) {
          lens[i++] = (uint8_t)s;
          continue;
        }
        int rep, val = 0;
        if (s == 16) {
          if (i == 0)
            return ONNXC_ERR_BAD_IMAGE;
          val = lens[i - 1];
          rep = 3 + (int)onnxc_getbits(&b, 2);
        } else if (s == 17) {
          rep = 3 + (int)onnxc_getbits(&b, 3);
        } else {
          rep = 11 + (int)onnxc_getbits(&b, 7);
        }
        if (i + rep > nlit + ndist)
          return ONNXC_ERR_BAD_IMAGE;
        while (rep--)
          lens[i++] = (uint8_t)val;
      }
      if (!onnxc_huff_build(&lit, lens, nlit) || !onnxc_huff_build(&dist, lens + nlit, ndist))
        return ONNXC_ERR_BAD_IMAGE;
    }
    for (;;) {
      int s = onnxc_huff_decode(&b, &lit);
      if (s < 0 || b.bad)
        return ONNXC_ERR_BAD_IMAGE;
      if (s < 256) {
        if (o >= cap)
          return ONNXC_ERR_BAD_IMAGE;
        out[o++] = (uint8_t)s;
      } else if (s == 256) {
        break;
      } else {
        s -= 257;
        if (s >= 29)
          return ONNXC_ERR_BAD_IMAGE;
        size_t len = lbase[s] + onnxc_getbits(&b, lext[s]);
        int ds = onnxc_huff_decode(&b, &dist);
        if (ds < 0 || ds >= 30)
          return ONNXC_ERR_BAD_IMAGE;
        size_t back = dbase[ds] + onnxc_getbits(&b, dext[ds]);
        if (b.bad || back > o || len > cap - o)
          return ONNXC_ERR_BAD_IMAGE;
        for (size_t k = 0; k < len; k++, o++)
          out[o] = out[o - back];
      }
    }
  } while (!last);
  *got = o;
  return ONNXC_OK;
}

/* ---- PNG --------------------------------------------------------------------- */

static int onnxc_png(const uint8_t *d, size_t n, const onnxc_img_out *o, uint8_t *scratch,
                     size_t scratch_bytes) {
  size_t pos = 8;
  long w = 0, h = 0;
  int depth = 0, ctype = -1, interlace = 0;
  const uint8_t *pal = NULL;
  uint32_t npal = 0;
  /* The zlib stream may span several IDAT chunks: gather them at the end of
   * scratch (it is at most the file's size), inflate to the front. */
  size_t zcap = n < scratch_bytes ? n : scratch_bytes, zlen = 0;
  uint8_t *z = scratch + scratch_bytes - zcap;
  while (pos + 12 <= n) {
    uint32_t len = onnxc_be32(d + pos);
    const uint8_t *type = d + pos + 4, *body = d + pos + 8;
    if (len > n - pos - 12)
      return ONNXC_ERR_BAD_IMAGE;
    if (onnxc_img_eq(type, "IHDR", 4) && len >= 13) {
      w = (long)onnxc_be32(body);
      h = (long)onnxc_be32(body + 4);
      depth = body[8];
      ctype = body[9];
      interlace = body[12];
    } else if (onnxc_img_eq(type, "PLTE", 4)) {
      pal = body;
      npal = len / 3;
    } else if (onnxc_img_eq(type, "IDAT", 4)) {
      if (len > zcap - zlen)
        return ONNXC_ERR_BAD_IMAGE;
      for (uint32_t i = 0; i < len; i++)
        z[zlen++] = body[i];
    } else if (onnxc_img_eq(type, "IEND", 4)) {
      break;
    }
    pos += 12 + (size_t)len;
  }
  if (w != o->w || h != o->h || ctype < 0)
    return ONNXC_ERR_BAD_IMAGE;
  if (depth != 8 || interlace)
    return ONNXC_ERR_UNSUPPORTED;
  int ch = ctype == 0 ? 1 : ctype == 2 ? 3 : ctype == 3 ? 1 : ctype == 4 ? 2 : ctype == 6 ? 4 : 0;
  if (!ch || (ctype == 3 && !pal))
    return ONNXC_ERR_BAD_IMAGE;
  size_t stride = (size_t)w * (size_t)ch, need = (stride + 1) * (size_t)h, got = 0;
  if (zlen < 2 || need > (size_t)(z - scratch))
    return ONNXC_ERR_BAD_IMAGE;
  int rc = onnxc_inflate(z + 2, zlen - 2, scratch, need, &got);
  if (rc != ONNXC_OK)
    return rc;
  if (got != need)
    return ONNXC_ERR_BAD_IMAGE;
  /* Unfilter in place: each row is its filter byte and stride bytes. */
  for (long y = 0; y < h; y++) {
    uint8_t *row = scratch + (size_t)y * (stride + 1) + 1;
    const uint8_t *up = y ? row - (stride + 1) : NULL;
    int f = row[-1];
    for (size_t i = 0; i < stride; i++) {
      int a = i >= (size_t)ch ? row[i - (size_t)ch] : 0, b = up ? up[i] : 0;
      int c = up && i >= (size_t)ch ? up[i - (size_t)ch] : 0, v = row[i];
      switch (f) {
      case 0: break;
      case 1: v += a; break;
      case 2: v += b; break;
      case 3: v += (a + b) >> 1; break;
      case 4: {
        int p = a + b - c, pa = p > a ? p - a : a - p, pb = p > b ? p - b : b - p;
        int pc = p > c ? p - c : c - p;
        v += (pa <= pb && pa <= pc) ? a : pb <= pc ? b : c;
        break;
      }
      default: return ONNXC_ERR_BAD_IMAGE;
      }
      row[i] = (uint8_t)v;
    }
    for (long x = 0; x < w; x++) {
      const uint8_t *p = row + (size_t)x * (size_t)ch;
      if (ctype == 2 || ctype == 6) {
        onnxc_img_put(o, y, x, p[0], p[1], p[2]);
      } else if (ctype == 3) {
        const uint8_t *c = pal + 3 * (size_t)(p[0] < npal ? p[0] : 0);
        onnxc_img_put(o, y, x, c[0], c[1], c[2]);
      } else {
        onnxc_img_put_gray(o, y, x, p[0]);
      }
    }
  }
  return ONNXC_OK;
}

/* ---- JPEG (baseline) ---------------------------------------------------------- */

typedef struct onnxc_jhuff {
  uint8_t bits[17];
  uint8_t val[256];
  int32_t maxcode[18], valptr[17], mincode[17];
} onnxc_jhuff;

typedef struct onnxc_jcomp {
  int id, hs, vs, tq, td, ta, pred;
  long bw, bh;          /* blocks across and down (padded to whole MCUs) */
  uint8_t *plane;       /* bw*8 x bh*8 samples */
} onnxc_jcomp;

typedef struct onnxc_jpeg {
  const uint8_t *d;
  size_t n, pos;
  uint32_t acc;
  int cnt, marker_hit, bad;
  uint16_t q[4][64];
  onnxc_jhuff dc[4], ac[4];
  onnxc_jcomp c[3];
  int nc, hmax, vmax;
  long w, h, restart;
} onnxc_jpeg;

static const uint8_t onnxc_zigzag[64] = {
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

static void onnxc_jhuff_build(onnxc_jhuff *h) {
  int32_t code = 0, k = 0;
  for (int l = 1; l <= 16; l++) {
    h->valptr[l] = k;
    h->mincode[l] = code;
    code += h->bits[l];
    k += h->bits[l];
    h->maxcode[l] = h->bits[l] ? code - 1 : -1;
    code <<= 1;
  }
  h->maxcode[17] = 0x7fffffff;
}

static int onnxc_jbit(onnxc_jpeg *j) {
  if (j->cnt == 0) {
    if (j->marker_hit || j->pos >= j->n) {
      j->acc = 0;   /* past the data: zeros, as decoders do */
      j->cnt = 8;
    } else {
      uint8_t byte = j->d[j->pos];
      if (byte == 0xFF) {
        uint8_t next = j->pos + 1 < j->n ? j->d[j->pos + 1] : 0;
        if (next == 0x00) {
          j->pos += 2;
        } else {
          j->marker_hit = 1;
          byte = 0;
        }
      } else {
        j->pos++;
      }
      j->acc = byte;
      j->cnt = 8;
    }
  }
  j->cnt--;
  return (int)(j->acc >> j->cnt) & 1;
}

static int32_t onnxc_jbits(onnxc_jpeg *j, int k) {
  int32_t v = 0;
  for (int i = 0; i < k; i++)
    v = (v << 1) | onnxc_jbit(j);
  return v;
}

static int onnxc_jdecode(onnxc_jpeg *j, const onnxc_jhuff *h) {
  int32_t code = onnxc_jbit(j);
  int l = 1;
  while (l <= 16 && code > h->maxcode[l]) {
    code = (code << 1) | onnxc_jbit(j);
    l++;
  }
  if (l > 16)
    return -1;
  int32_t idx = h->valptr[l] + code - h->mincode[l];
  return idx >= 0 && idx < 256 ? h->val[idx] : -1;
}

static int32_t onnxc_jextend(int32_t v, int t) {
  return t && v < (1 << (t - 1)) ? v - (1 << t) + 1 : v;
}

/* libjpeg's "islow" inverse DCT (13-bit constants, 2 extra bits in pass 1). */
#define ONNXC_JFIX_0_298631336 2446
#define ONNXC_JFIX_0_390180644 3196
#define ONNXC_JFIX_0_541196100 4433
#define ONNXC_JFIX_0_765366865 6270
#define ONNXC_JFIX_0_899976223 7373
#define ONNXC_JFIX_1_175875602 9633
#define ONNXC_JFIX_1_501321110 12299
#define ONNXC_JFIX_1_847759065 15137
#define ONNXC_JFIX_1_961570560 16069
#define ONNXC_JFIX_2_053119869 16819
#define ONNXC_JFIX_2_562915447 20995
#define ONNXC_JFIX_3_072711026 25172

static uint8_t onnxc_jclamp(int32_t x) {
  /* x is a level-shifted sample before +128; out-of-range values wrap the way
   * libjpeg's range-limit table (indexed by x & 1023) maps them. */
  int32_t m = x & 1023;
  return m < 384 ? (uint8_t)(m + 128 > 255 ? 255 : m + 128) : m < 896 ? 0 : (uint8_t)(m - 896);
}

static void onnxc_jidct_1d(const int32_t *in, int stride, int32_t *t) {
  int32_t z1, z2, z3, z4, z5, t0, t1, t2, t3, t10, t11, t12, t13;
  z2 = in[2 * stride];
  z3 = in[6 * stride];
  z1 = (z2 + z3) * ONNXC_JFIX_0_541196100;
  t2 = z1 + z3 * -ONNXC_JFIX_1_847759065;
  t3 = z1 + z2 * ONNXC_JFIX_0_765366865;
  t0 = (int32_t)((uint32_t)(in[0] + in[4 * stride]) << 13);
  t1 = (int32_t)((uint32_t)(in[0] - in[4 * stride]) << 13);
  t10 = t0 + t3;
  t13 = t0 - t3;
  t11 = t1 + t2;
  t12 = t1 - t2;
  t0 = in[7 * stride];
  t1 = in[5 * stride];
  t2 = in[3 * stride];
  t3 = in[1 * stride];
  z1 = t0 + t3;
  z2 = t1 + t2;
  z3 = t0 + t2;
  z4 = t1 + t3;
  z5 = (z3 + z4) * ONNXC_JFIX_1_175875602;
  t0 *= ONNXC_JFIX_0_298631336;
  t1 *= ONNXC_JFIX_2_053119869;
  t2 *= ONNXC_JFIX_3_072711026;
  t3 *= ONNXC_JFIX_1_501321110;
  z1 *= -ONNXC_JFIX_0_899976223;
  z2 *= -ONNXC_JFIX_2_562915447;
  z3 *= -ONNXC_JFIX_1_961570560;
  z4 *= -ONNXC_JFIX_0_390180644;
  z3 += z5;
  z4 += z5;
  t0 += z1 + z3;
  t1 += z2 + z4;
  t2 += z2 + z3;
  t3 += z1 + z4;
  t[0] = t10 + t3;
  t[7] = t10 - t3;
  t[1] = t11 + t2;
  t[6] = t11 - t2;
  t[2] = t12 + t1;
  t[5] = t12 - t1;
  t[3] = t13 + t0;
  t[4] = t13 - t0;
}

static void onnxc_jidct(const int32_t *coef, uint8_t *out, long stride) {
  int32_t ws[64], t[8];
  for (int c = 0; c < 8; c++) {
    onnxc_jidct_1d(coef + c, 8, t);
    for (int r = 0; r < 8; r++)
      ws[r * 8 + c] = (t[r] + (1 << 10)) >> 11;   /* CONST_BITS - PASS1_BITS */
  }
  for (int r = 0; r < 8; r++) {
    onnxc_jidct_1d(ws + r * 8, 1, t);
    for (int c = 0; c < 8; c++)
      out[r * stride + c] = onnxc_jclamp((t[c] + (1 << 17)) >> 18);   /* CONST_BITS + PASS1_BITS + 3 */
  }
}

static int onnxc_jpeg_block(onnxc_jpeg *j, onnxc_jcomp *c, uint8_t *out, long stride) {
  int32_t coef[64];
  for (int i = 0; i < 64; i++)
    coef[i] = 0;
  int t = onnxc_jdecode(j, &j->dc[c->td]);
  if (t < 0 || t > 11)
    return 0;
  c->pred += onnxc_jextend(onnxc_jbits(j, t), t);
  coef[0] = c->pred * j->q[c->tq][0];
  for (int k = 1; k < 64;) {
    int rs = onnxc_jdecode(j, &j->ac[c->ta]);
    if (rs < 0)
      return 0;
    int r = rs >> 4, s = rs & 15;
    if (s == 0) {
      if (r != 15)
        break;
      k += 16;
      continue;
    }
    k += r;
    if (k > 63)
      return 0;
    coef[onnxc_zigzag[k]] = onnxc_jextend(onnxc_jbits(j, s), s) * j->q[c->tq][k];
    k++;
  }
  onnxc_jidct(coef, out, stride);
  return 1;
}

/* Skips to just after the next RSTn marker and resets the predictors. */
static void onnxc_jpeg_restart(onnxc_jpeg *j) {
  j->cnt = 0;
  j->marker_hit = 0;
  while (j->pos + 1 < j->n && !(j->d[j->pos] == 0xFF && j->d[j->pos + 1] >= 0xD0 && j->d[j->pos + 1] <= 0xD7))
    j->pos++;
  if (j->pos + 1 < j->n)
    j->pos += 2;
  for (int i = 0; i < j->nc; i++)
    j->c[i].pred = 0;
}

static int onnxc_jpeg_scan(onnxc_jpeg *j, const int *scomp, int ns) {
  if (ns == 1) {
    /* Non-interleaved: one block per MCU over the component's own extent. */
    onnxc_jcomp *c = &j->c[scomp[0]];
    long cw = (j->w * c->hs + j->hmax - 1) / j->hmax, ch = (j->h * c->vs + j->vmax - 1) / j->vmax;
    long bx = (cw + 7) / 8, by = (ch + 7) / 8, count = 0;
    for (long y = 0; y < by; y++)
      for (long x = 0; x < bx; x++) {
        if (j->restart && count && count % j->restart == 0)
          onnxc_jpeg_restart(j);
        count++;
        if (!onnxc_jpeg_block(j, c, c->plane + y * 8 * c->bw * 8 + x * 8, c->bw * 8))
          return ONNXC_ERR_BAD_IMAGE;
      }
    return ONNXC_OK;
  }
  long mx = (j->w + 8 * j->hmax - 1) / (8 * j->hmax), my = (j->h + 8 * j->vmax - 1) / (8 * j->vmax);
  long count = 0;
  for (long y = 0; y < my; y++)
    for (long x = 0; x < mx; x++) {
      if (j->restart && count && count % j->restart == 0)
        onnxc_jpeg_restart(j);
      count++;
      for (int s = 0; s < ns; s++) {
        onnxc_jcomp *c = &j->c[scomp[s]];
        for (int v = 0; v < c->vs; v++)
          for (int u = 0; u < c->hs; u++) {
            long row = (y * c->vs + v) * 8, col = (x * c->hs + u) * 8;
            if (!onnxc_jpeg_block(j, c, c->plane + row * c->bw * 8 + col, c->bw * 8))
              return ONNXC_ERR_BAD_IMAGE;
          }
      }
    }
  return ONNXC_OK;
}

/* Sample (y, x) of component c upsampled to full size the way libjpeg's
 * default ("fancy") upsampling does for 2x1 and 2x2; 1x1 is a copy. cw/ch:
 * the component's real (downsampled) size. */
static int onnxc_jsample(const onnxc_jcomp *c, long cw, long ch, int hf, int vf, long y, long x) {
  long st = c->bw * 8;
  const uint8_t *p = c->plane;
  if (hf == 1 && vf == 1)
    return p[y * st + x];
  long sy = y / vf, sx = x / hf;
  if (hf == 2 && vf == 1) {
    const uint8_t *r = p + sy * st;
    int here = r[sx] * 3;
    if (x % 2 == 0)
      return sx == 0 ? r[0] : (here + r[sx - 1] + 1) >> 2;
    return sx == cw - 1 ? r[sx] : (here + r[sx + 1] + 2) >> 2;
  }
  if (hf == 2 && vf == 2) {
    long ny = y % 2 == 0 ? sy - 1 : sy + 1;
    if (ny < 0)
      ny = 0;
    if (ny > ch - 1)
      ny = ch - 1;
    const uint8_t *r0 = p + sy * st, *r1 = p + ny * st;
#define ONNXC_COLSUM(i) (r0[i] * 3 + r1[i])
    int this_ = ONNXC_COLSUM(sx);
    if (x % 2 == 0)
      return sx == 0 ? (this_ * 4 + 8) >> 4 : (this_ * 3 + ONNXC_COLSUM(sx - 1) + 8) >> 4;
    return sx == cw - 1 ? (this_ * 4 + 7) >> 4 : (this_ * 3 + ONNXC_COLSUM(sx + 1) + 7) >> 4;
#undef ONNXC_COLSUM
  }
  return p[sy * st + sx];   /* other factors: replicate */
}

static int onnxc_jpeg_decode(const uint8_t *d, size_t n, const onnxc_img_out *o, uint8_t *scratch,
                             size_t scratch_bytes) {
  static const onnxc_jpeg zero;
  onnxc_jpeg jj = zero, *j = &jj;
  j->d = d;
  j->n = n;
  j->pos = 2;
  int have_frame = 0, done = 0, seen = 0;
  while (!done) {
    while (j->pos < n && d[j->pos] != 0xFF)
      j->pos++;
    while (j->pos < n && d[j->pos] == 0xFF)
      j->pos++;
    if (j->pos + 2 >= n)
      return ONNXC_ERR_BAD_IMAGE;
    int m = d[j->pos++];
    if (m == 0x00 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01)
      continue;
    if (m == 0xD9)
      return ONNXC_ERR_BAD_IMAGE;
    size_t len = onnxc_be16(d + j->pos);
    if (len < 2 || len > n - j->pos)
      return ONNXC_ERR_BAD_IMAGE;
    const uint8_t *s = d + j->pos + 2, *end = d + j->pos + len;
    j->pos += len;
    if (m == 0xDB) {
      while (s < end) {
        int pq = *s >> 4, tq = *s & 3;
        s++;
        if ((size_t)(end - s) < (pq ? 128u : 64u))
          return ONNXC_ERR_BAD_IMAGE;
        for (int i = 0; i < 64; i++, s += pq ? 2 : 1)
          j->q[tq][i] = (uint16_t)(pq ? onnxc_be16(s) : *s);
      }
    } else if (m == 0xC4) {
      while (s < end) {
        int tc = *s >> 4, th = *s & 3;
        s++;
        onnxc_jhuff *h = tc ? &j->ac[th] : &j->dc[th];
        if (end - s < 16)
          return ONNXC_ERR_BAD_IMAGE;
        int total = 0;
        h->bits[0] = 0;
        for (int i = 1; i <= 16; i++)
          total += h->bits[i] = *s++;
        if (total > 256 || end - s < total)
          return ONNXC_ERR_BAD_IMAGE;
        for (int i = 0; i < total; i++)
          h->val[i] = *s++;
        onnxc_jhuff_build(h);
      }
    } else if (m == 0xDD) {
      j->restart = (long)onnxc_be16(s);
    } else if (m == 0xC0 || m == 0xC1) {
      if (end - s < 6 || s[0] != 8)
        return s[0] != 8 ? ONNXC_ERR_UNSUPPORTED : ONNXC_ERR_BAD_IMAGE;
      j->h = (long)onnxc_be16(s + 1);
      j->w = (long)onnxc_be16(s + 3);
      j->nc = s[5];
      if (j->w != o->w || j->h != o->h)
        return ONNXC_ERR_BAD_IMAGE;
      if ((j->nc != 1 && j->nc != 3) || end - s < 6 + 3 * j->nc)
        return ONNXC_ERR_UNSUPPORTED;
      j->hmax = j->vmax = 1;
      for (int i = 0; i < j->nc; i++) {
        onnxc_jcomp *c = &j->c[i];
        c->id = s[6 + 3 * i];
        c->hs = s[7 + 3 * i] >> 4;
        c->vs = s[7 + 3 * i] & 15;
        c->tq = s[8 + 3 * i] & 3;
        if (c->hs < 1 || c->hs > 2 || c->vs < 1 || c->vs > 2)
          return ONNXC_ERR_UNSUPPORTED;
        j->hmax = c->hs > j->hmax ? c->hs : j->hmax;
        j->vmax = c->vs > j->vmax ? c->vs : j->vmax;
      }
      long mx = (j->w + 8 * j->hmax - 1) / (8 * j->hmax), my = (j->h + 8 * j->vmax - 1) / (8 * j->vmax);
      size_t used = 0;
      for (int i = 0; i < j->nc; i++) {
        onnxc_jcomp *c = &j->c[i];
        c->bw = mx * c->hs;
        c->bh = my * c->vs;
        size_t bytes = (size_t)c->bw * 8 * (size_t)c->bh * 8;
        if (bytes > scratch_bytes - used)
          return ONNXC_ERR_BAD_IMAGE;
        c->plane = scratch + used;
        used += bytes;
      }
      have_frame = 1;
    } else if (m >= 0xC2 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      return ONNXC_ERR_UNSUPPORTED;   /* progressive, lossless, arithmetic */
    } else if (m == 0xDA) {
      if (!have_frame || end - s < 1)
        return ONNXC_ERR_BAD_IMAGE;
      int ns = s[0], scomp[3];
      if (ns < 1 || ns > j->nc || end - s < 1 + 2 * ns)
        return ONNXC_ERR_BAD_IMAGE;
      for (int i = 0; i < ns; i++) {
        int id = s[1 + 2 * i], k = 0;
        while (k < j->nc && j->c[k].id != id)
          k++;
        if (k == j->nc)
          return ONNXC_ERR_BAD_IMAGE;
        scomp[i] = k;
        j->c[k].td = s[2 + 2 * i] >> 4 & 3;
        j->c[k].ta = s[2 + 2 * i] & 3;
        j->c[k].pred = 0;
      }
      j->cnt = 0;
      j->marker_hit = 0;
      int rc = onnxc_jpeg_scan(j, scomp, ns);
      if (rc != ONNXC_OK)
        return rc;
      for (int i = 0; i < ns; i++)
        seen |= 1 << scomp[i];
      done = seen == (1 << j->nc) - 1;   /* every component decoded */
    }
  }
  /* Colour conversion: YCbCr to RGB in libjpeg's 16-bit fixed point. */
  for (long y = 0; y < j->h; y++)
    for (long x = 0; x < j->w; x++) {
      if (j->nc == 1) {
        onnxc_img_put_gray(o, y, x, j->c[0].plane[y * j->c[0].bw * 8 + x]);
        continue;
      }
      int v[3];
      for (int i = 0; i < 3; i++) {
        const onnxc_jcomp *c = &j->c[i];
        int hf = j->hmax / c->hs, vf = j->vmax / c->vs;
        long cw = (j->w * c->hs + j->hmax - 1) / j->hmax, chh = (j->h * c->vs + j->vmax - 1) / j->vmax;
        v[i] = onnxc_jsample(c, cw, chh, hf, vf, y, x);
      }
      int32_t yy = v[0], cb = v[1] - 128, cr = v[2] - 128;
      int32_t r = yy + ((91881 * cr + 32768) >> 16);
      int32_t g = yy + ((-46802 * cr + -22554 * cb + 32768) >> 16);
      int32_t b = yy + ((116130 * cb + 32768) >> 16);
      onnxc_img_put(o, y, x, r < 0 ? 0 : r > 255 ? 255 : r, g < 0 ? 0 : g > 255 ? 255 : g,
                    b < 0 ? 0 : b > 255 ? 255 : b);
    }
  return ONNXC_OK;
}

#include "onnxc_webp.h"   /* WebP, spliced in by the build (runtime/CMakeLists.txt) */

/* ---- entry point ------------------------------------------------------------ */

static int onnxc_image_decode(const uint8_t *d, size_t n, uint8_t *px, long h, long w, int fmt,
                              uint8_t *scratch, size_t scratch_bytes) {
  onnxc_img_out o = {px, h, w, fmt};
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF)
    return onnxc_jpeg_decode(d, n, &o, scratch, scratch_bytes);
  if (n >= 8 && onnxc_img_eq(d, "\x89PNG\r\n\x1a\n", 8))
    return onnxc_png(d, n, &o, scratch, scratch_bytes);
  if (n >= 2 && d[0] == 'B' && d[1] == 'M')
    return onnxc_bmp(d, n, &o);
  if (n >= 3 && d[0] == 'P' && (d[1] == '5' || d[1] == '6'))
    return onnxc_pnm(d, n, &o);
  if (n >= 8 && ((d[0] == 'I' && d[1] == 'I' && d[2] == 42 && d[3] == 0) ||
                 (d[0] == 'M' && d[1] == 'M' && d[2] == 0 && d[3] == 42)))
    return onnxc_tiff_decode(d, n, &o);
  if (n >= 12 && onnxc_img_eq(d, "RIFF", 4) && onnxc_img_eq(d + 8, "WEBP", 4))
    return onnxc_webp(d, n, &o, scratch, scratch_bytes);
  if (n >= 12 && (onnxc_img_eq(d, "\0\0\0\x0cjP  ", 8) || (d[0] == 0xFF && d[1] == 0x4F)))
    return onnxc_j2k_decode(d, n, px, h, w, fmt, scratch, scratch_bytes);
  return ONNXC_ERR_BAD_IMAGE;
}

#endif
