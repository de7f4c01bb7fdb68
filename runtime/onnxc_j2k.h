/* onnxc_j2k.h - JPEG 2000 (ISO/IEC 15444-1) decoding for ImageDecoder.
 *
 * Decodes a JP2 file or a raw J2K codestream of 1-4 components of 8 bits
 * (a signed one is offset by 128 as Pillow does, which is the unsigned DC
 * level shift), no subsampling, reversible 5/3 wavelet: JP2 boxes (Annex
 * I), main and tile-part headers (Annex A: SIZ, COD, COC, QCD,
 * QCC; several tiles and tile-parts), packets in all five progression orders
 * with precincts, layers, SOP/EPH (Annex B: tag trees, inclusion, zero
 * bit-planes, pass counts, Lblock), EBCOT tier-1 (Annex C MQ decoder, Annex D
 * significance / refinement / cleanup passes with the RESET, VSC, PTERM and
 * SEGSYM switches), the inverse 5/3 lifting DWT with symmetric extension
 * (Annex F), the inverse RCT (Annex G) and the DC level shift. Lossless
 * data decodes bit-exactly; truncated code-blocks reconstruct at the
 * midpoint of the last decoded interval. The 9/7 wavelet, ROI (RGN), POC,
 * packed headers (PPM/PPT), the BYPASS and TERMALL switches, subsampled
 * components and depths other than 8 return ONNXC_ERR_UNSUPPORTED.
 *
 * Scratch: a bump arena over the caller's buffer (onnxc_image.h sizes it
 * with ONNXC_J2K_SCRATCH); a file that needs more returns UNSUPPORTED. No
 * recursion; every read of the input is bounds-checked.
 */
#ifndef ONNXC_J2K_H
#define ONNXC_J2K_H

#include "onnxc_rt.h"

/* Scratch for an h x w image of n encoded bytes: coefficient planes of 3
 * components (12hw), code-block and tag-tree state (up to 8hw), the
 * gathered code-block data (n) and fixed work areas. */
#define ONNXC_J2K_SCRATCH(h, w, n) ((size_t)(20 * (h) * (w) + (n) + 16 * ((h) + (w)) + 65536))

#define ONNXC_J2K_MAXPARTS 64

typedef struct onnxc_j2k_comp {
  uint8_t levels, xcb, ycb, style, rev, guard, qstyle, neps, cod_prio, qcd_prio;
  uint8_t ppx[33], ppy[33], eps[97];
} onnxc_j2k_comp;

typedef struct onnxc_j2k_coding {
  onnxc_j2k_comp c[4];
  int prog, layers, mct, sop, eph;
} onnxc_j2k_coding;

typedef struct onnxc_j2k_band {
  int32_t x0, y0, x1, y1, ox, oy; /* band rectangle; its place in the tile plane */
  uint8_t orient, mb, cbw, cbh;   /* 0 LL 1 HL 2 LH 3 HH; magnitude bit-planes; log2 code-block size */
} onnxc_j2k_band;

typedef struct onnxc_j2k_res {
  int32_t x0, y0, x1, y1, npw, nph;
  uint32_t pb;                    /* first precinct-band: pb + p * nbands + b */
  uint8_t ppx, ppy, nbands;
  onnxc_j2k_band band[3];
} onnxc_j2k_res;

typedef struct onnxc_j2k_pb {    /* the code-blocks of one band inside one precinct */
  int32_t cbx0, cby0, ncbw, ncbh;
  uint32_t cb, tt;                /* first code-block; first tag-tree node (inclusion, then zero planes) */
} onnxc_j2k_pb;

typedef struct onnxc_j2k_cb {
  uint32_t len, fill, off, cur;
  uint8_t incl, lblock, zbp, passes;
} onnxc_j2k_cb;

typedef struct onnxc_j2k {
  const uint8_t *cs;
  size_t n;
  int64_t X0, Y0, X1, Y1, TW, TH, TX0, TY0;
  int nc, ndec, ntx, nty;
  onnxc_j2k_coding main, t;       /* main-header and current-tile coding parameters */
  int64_t tx0, ty0, tx1, ty1;
  onnxc_j2k_res *res[4];
  onnxc_j2k_pb *pb;
  onnxc_j2k_cb *cb;
  int32_t *tt, *plane[3], *line;
  uint32_t *mag;
  uint8_t *flag, *gather;
  uint32_t npb, ncb, ntt, ngather;
  size_t rs[ONNXC_J2K_MAXPARTS], re[ONNXC_J2K_MAXPARTS];
  int nparts, part, done;
  size_t pos;
  uint8_t *arena;
  size_t used, cap;
} onnxc_j2k;

static void *onnxc_j2k_alloc(onnxc_j2k *J, size_t bytes) {
  size_t at = (J->used + 7) & ~(size_t)7;
  if (at > J->cap || J->cap - at < bytes)
    return NULL;
  J->used = at + bytes;
  return J->arena + at;
}

static uint32_t onnxc_j2k_be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t onnxc_j2k_be32(const uint8_t *p) { return onnxc_j2k_be16(p) << 16 | onnxc_j2k_be16(p + 2); }
static int64_t onnxc_j2k_ceilshr(int64_t a, int k) { /* ceil(a / 2^k), a may be negative */
  int64_t d = (int64_t)1 << k;
  return a >= 0 ? (a + d - 1) / d : -((-a) / d);
}

/* ---- marker segments (Annex A) -------------------------------------------- */

static int onnxc_j2k_siz(onnxc_j2k *J, const uint8_t *p, size_t len, long h, long w) {
  if (len < 36)
    return ONNXC_ERR_BAD_IMAGE;
  int nc = (int)onnxc_j2k_be16(p + 34);
  if (nc < 1 || len < 36 + 3 * (size_t)nc)
    return ONNXC_ERR_BAD_IMAGE;
  uint32_t v[8];
  for (int i = 0; i < 8; i++) {
    v[i] = onnxc_j2k_be32(p + 2 + 4 * i);
    if (v[i] > 0x7FFFFFFFu)
      return ONNXC_ERR_UNSUPPORTED;
  }
  J->X1 = v[0], J->Y1 = v[1], J->X0 = v[2], J->Y0 = v[3];
  J->TW = v[4], J->TH = v[5], J->TX0 = v[6], J->TY0 = v[7];
  if (J->X0 >= J->X1 || J->Y0 >= J->Y1 || J->TW == 0 || J->TH == 0 || J->TX0 > J->X0 ||
      J->TY0 > J->Y0 || J->TX0 + J->TW <= J->X0 || J->TY0 + J->TH <= J->Y0)
    return ONNXC_ERR_BAD_IMAGE;
  if (J->X1 - J->X0 != w || J->Y1 - J->Y0 != h)
    return ONNXC_ERR_BAD_IMAGE;
  if (nc > 4)
    return ONNXC_ERR_UNSUPPORTED;
  for (int c = 0; c < nc; c++)
    if ((p[36 + 3 * c] & 0x7F) != 7 || p[37 + 3 * c] != 1 || p[38 + 3 * c] != 1)
      return ONNXC_ERR_UNSUPPORTED; /* 8-bit, no subsampling */
  J->nc = nc;
  J->ndec = nc >= 3 ? 3 : 1;      /* alpha (and LA's A) is not output */
  int64_t ntx = (J->X1 - J->TX0 + J->TW - 1) / J->TW, nty = (J->Y1 - J->TY0 + J->TH - 1) / J->TH;
  if (ntx * nty > 65535)
    return ONNXC_ERR_BAD_IMAGE;
  J->ntx = (int)ntx, J->nty = (int)nty;
  return ONNXC_OK;
}

/* SPcod / SPcoc: levels, code-block size and style, transform, precincts. */
static int onnxc_j2k_spcod(onnxc_j2k_comp *c, const uint8_t *p, size_t len, int prec) {
  if (len < 5)
    return ONNXC_ERR_BAD_IMAGE;
  if (p[0] > 32 || p[1] > 8 || p[2] > 8 || p[1] + p[2] > 8 || p[4] > 1)
    return ONNXC_ERR_BAD_IMAGE;
  if (prec && len < 5 + (size_t)p[0] + 1)
    return ONNXC_ERR_BAD_IMAGE;
  c->levels = p[0], c->xcb = (uint8_t)(p[1] + 2), c->ycb = (uint8_t)(p[2] + 2);
  c->style = p[3], c->rev = p[4];
  for (int r = 0; r <= c->levels; r++) {
    c->ppx[r] = prec ? (uint8_t)(p[5 + r] & 15) : 15;
    c->ppy[r] = prec ? (uint8_t)(p[5 + r] >> 4) : 15;
    if (r > 0 && (c->ppx[r] == 0 || c->ppy[r] == 0))
      return ONNXC_ERR_BAD_IMAGE;
  }
  return ONNXC_OK;
}

/* SPqcd / SPqcc: guard bits and each band's exponent. */
static int onnxc_j2k_sqcd(onnxc_j2k_comp *c, const uint8_t *p, size_t len) {
  if (len < 1)
    return ONNXC_ERR_BAD_IMAGE;
  int qs = p[0] & 31, k = 0;
  c->guard = (uint8_t)(p[0] >> 5), c->qstyle = (uint8_t)qs;
  if (qs == 0)
    for (; k < 97 && (size_t)k + 1 < len; k++)
      c->eps[k] = (uint8_t)(p[1 + k] >> 3);
  else if (qs == 1 || qs == 2)
    for (; k < (qs == 1 ? 1 : 97) && 2 * (size_t)k + 2 < len; k++)
      c->eps[k] = (uint8_t)(p[1 + 2 * k] >> 3);
  else
    return ONNXC_ERR_BAD_IMAGE;
  c->neps = (uint8_t)k;
  return k ? ONNXC_OK : ONNXC_ERR_BAD_IMAGE;
}

/* One marker segment of a main (prio 1-2) or tile-part (3-4) header. */
static int onnxc_j2k_marker(onnxc_j2k *J, onnxc_j2k_coding *cod, uint32_t m, const uint8_t *p,
                            size_t len, int tile, int *seen) {
  int rc = ONNXC_OK;
  switch (m) {
  case 0xFF52: /* COD */
    if (len < 5 || p[1] > 4 || onnxc_j2k_be16(p + 2) == 0 || p[4] > 1)
      return ONNXC_ERR_BAD_IMAGE;
    cod->prog = p[1], cod->layers = (int)onnxc_j2k_be16(p + 2), cod->mct = p[4];
    cod->sop = (p[0] >> 1) & 1, cod->eph = (p[0] >> 2) & 1;
    for (int c = 0; c < J->nc && rc == ONNXC_OK; c++)
      if (cod->c[c].cod_prio <= 1 + 2 * tile) {
        rc = onnxc_j2k_spcod(&cod->c[c], p + 5, len - 5, p[0] & 1);
        cod->c[c].cod_prio = (uint8_t)(1 + 2 * tile);
      }
    *seen |= 1;
    return rc;
  case 0xFF53: /* COC */
    if (len < 2 || p[0] >= J->nc)
      return ONNXC_ERR_BAD_IMAGE;
    cod->c[p[0]].cod_prio = (uint8_t)(2 + 2 * tile);
    return onnxc_j2k_spcod(&cod->c[p[0]], p + 2, len - 2, p[1] & 1);
  case 0xFF5C: /* QCD */
    for (int c = 0; c < J->nc && rc == ONNXC_OK; c++)
      if (cod->c[c].qcd_prio <= 1 + 2 * tile) {
        rc = onnxc_j2k_sqcd(&cod->c[c], p, len);
        cod->c[c].qcd_prio = (uint8_t)(1 + 2 * tile);
      }
    *seen |= 2;
    return rc;
  case 0xFF5D: /* QCC */
    if (len < 1 || p[0] >= J->nc)
      return ONNXC_ERR_BAD_IMAGE;
    cod->c[p[0]].qcd_prio = (uint8_t)(2 + 2 * tile);
    return onnxc_j2k_sqcd(&cod->c[p[0]], p + 1, len - 1);
  case 0xFF5E: /* RGN */
  case 0xFF5F: /* POC */
  case 0xFF60: /* PPM */
  case 0xFF61: /* PPT */
    return ONNXC_ERR_UNSUPPORTED;
  default: /* COM, TLM, PLM, PLT, CRG, CAP... carry nothing we need */
    return ONNXC_OK;
  }
}

/* Parses marker segments from *pos up to the one that stops a header (SOT for
 * the main header, SOD for a tile-part), leaving *pos on it. */
static int onnxc_j2k_header(onnxc_j2k *J, onnxc_j2k_coding *cod, size_t *pos, size_t end, int tile,
                            int *seen) {
  for (;;) {
    if (*pos + 2 > end)
      return ONNXC_ERR_BAD_IMAGE;
    uint32_t m = onnxc_j2k_be16(J->cs + *pos);
    if (m == (tile ? 0xFF93u : 0xFF90u))
      return ONNXC_OK;
    if ((m & 0xFF00) != 0xFF00 || *pos + 4 > end)
      return ONNXC_ERR_BAD_IMAGE;
    size_t L = onnxc_j2k_be16(J->cs + *pos + 2);
    if (L < 2 || end - *pos - 2 < L)
      return ONNXC_ERR_BAD_IMAGE;
    int rc = onnxc_j2k_marker(J, cod, m, J->cs + *pos + 4, L - 2, tile, seen);
    if (rc != ONNXC_OK)
      return rc;
    *pos += 2 + L;
  }
}

/* ---- tile layout (Annex B.5-B.7) ------------------------------------------ */

static uint32_t onnxc_j2k_ttnodes(int32_t w, int32_t h) {
  uint32_t n = 0;
  for (;;) {
    n += (uint32_t)w * (uint32_t)h;
    if (w <= 1 && h <= 1)
      return n;
    w = (w + 1) / 2, h = (h + 1) / 2;
  }
}

/* Resolutions, bands, precincts and code-blocks of the current tile. With
 * fill == 0 only counts precinct-bands, code-blocks and tag-tree nodes. */
static int onnxc_j2k_layout(onnxc_j2k *J, int fill) {
  uint32_t npb = 0, ncb = 0, ntt = 0;
  for (int c = 0; c < J->nc; c++) {
    const onnxc_j2k_comp *cp = &J->t.c[c];
    int NL = cp->levels;
    for (int r = 0; r <= NL; r++) {
      int s = NL - r;
      onnxc_j2k_res R;
      R.x0 = (int32_t)onnxc_j2k_ceilshr(J->tx0, s), R.x1 = (int32_t)onnxc_j2k_ceilshr(J->tx1, s);
      R.y0 = (int32_t)onnxc_j2k_ceilshr(J->ty0, s), R.y1 = (int32_t)onnxc_j2k_ceilshr(J->ty1, s);
      R.ppx = cp->ppx[r], R.ppy = cp->ppy[r];
      R.npw = R.x0 == R.x1 ? 0 : (int32_t)(onnxc_j2k_ceilshr(R.x1, R.ppx) - (R.x0 >> R.ppx));
      R.nph = R.y0 == R.y1 ? 0 : (int32_t)(onnxc_j2k_ceilshr(R.y1, R.ppy) - (R.y0 >> R.ppy));
      R.nbands = r == 0 ? 1 : 3;
      R.pb = npb;
      /* The previous (lower) resolution's size places this one's bands. */
      int64_t lw = onnxc_j2k_ceilshr(J->tx1, s + 1) - onnxc_j2k_ceilshr(J->tx0, s + 1);
      int64_t lh = onnxc_j2k_ceilshr(J->ty1, s + 1) - onnxc_j2k_ceilshr(J->ty0, s + 1);
      for (int b = 0; b < R.nbands; b++) {
        onnxc_j2k_band *B = &R.band[b];
        int orient = r == 0 ? 0 : b + 1, nb = r == 0 ? NL : s + 1;
        int xob = orient & 1, yob = orient >> 1;
        int64_t dx = r == 0 ? 0 : (int64_t)xob << (nb - 1), dy = r == 0 ? 0 : (int64_t)yob << (nb - 1);
        B->x0 = (int32_t)onnxc_j2k_ceilshr(J->tx0 - dx, nb), B->x1 = (int32_t)onnxc_j2k_ceilshr(J->tx1 - dx, nb);
        B->y0 = (int32_t)onnxc_j2k_ceilshr(J->ty0 - dy, nb), B->y1 = (int32_t)onnxc_j2k_ceilshr(J->ty1 - dy, nb);
        B->ox = xob ? (int32_t)lw : 0, B->oy = yob ? (int32_t)lh : 0;
        B->orient = (uint8_t)orient;
        int k = r == 0 ? 0 : 3 * (r - 1) + b + 1, eps;
        if (cp->qstyle == 1)
          eps = cp->eps[0] - (r == 0 ? 0 : r - 1);
        else if (k < cp->neps)
          eps = cp->eps[k];
        else
          return ONNXC_ERR_BAD_IMAGE;
        int mb = cp->guard + eps - 1;
        if (mb < 0 || mb > 30)
          return ONNXC_ERR_UNSUPPORTED;
        B->mb = (uint8_t)mb;
        int pw = r == 0 ? R.ppx : R.ppx - 1, ph = r == 0 ? R.ppy : R.ppy - 1;
        B->cbw = (uint8_t)(cp->xcb < pw ? cp->xcb : pw);
        B->cbh = (uint8_t)(cp->ycb < ph ? cp->ycb : ph);
      }
      if (fill)
        J->res[c][r] = R;
      if (R.npw && (uint64_t)R.npw * (uint64_t)R.nph * R.nbands > 0xFFFFFFu)
        return ONNXC_ERR_UNSUPPORTED;
      for (int32_t p = 0; p < R.npw * R.nph; p++) {
        int64_t px0 = ((int64_t)(R.x0 >> R.ppx) + p % R.npw) << R.ppx;
        int64_t py0 = ((int64_t)(R.y0 >> R.ppy) + p / R.npw) << R.ppy;
        for (int b = 0; b < R.nbands; b++, npb++) {
          const onnxc_j2k_band *B = &R.band[b];
          int sh = r == 0 ? 0 : 1;
          int64_t bx0 = px0 >> sh, by0 = py0 >> sh;
          int64_t bx1 = bx0 + ((int64_t)1 << (R.ppx - sh)), by1 = by0 + ((int64_t)1 << (R.ppy - sh));
          if (bx0 < B->x0) bx0 = B->x0;
          if (by0 < B->y0) by0 = B->y0;
          if (bx1 > B->x1) bx1 = B->x1;
          if (by1 > B->y1) by1 = B->y1;
          onnxc_j2k_pb P = {0, 0, 0, 0, ncb, ntt};
          if (bx0 < bx1 && by0 < by1) {
            P.cbx0 = (int32_t)(bx0 >> B->cbw), P.cby0 = (int32_t)(by0 >> B->cbh);
            P.ncbw = (int32_t)(onnxc_j2k_ceilshr(bx1, B->cbw) - P.cbx0);
            P.ncbh = (int32_t)(onnxc_j2k_ceilshr(by1, B->cbh) - P.cby0);
            uint64_t cbs = (uint64_t)P.ncbw * (uint64_t)P.ncbh;
            if (cbs > 0xFFFFFFu || ncb + cbs > 0xFFFFFFu)
              return ONNXC_ERR_UNSUPPORTED;
            ncb += (uint32_t)cbs;
            ntt += 2 * onnxc_j2k_ttnodes(P.ncbw, P.ncbh);
            if (ntt > 0x3FFFFFFu)
              return ONNXC_ERR_UNSUPPORTED;
          }
          if (fill)
            J->pb[npb] = P;
        }
        if (npb > 0xFFFFFFu)
          return ONNXC_ERR_UNSUPPORTED;
      }
    }
  }
  J->npb = npb, J->ncb = ncb, J->ntt = ntt;
  return ONNXC_OK;
}

/* ---- packet headers (Annex B.9-B.10) ------------------------------------- */

typedef struct onnxc_j2k_bits {
  const uint8_t *d;
  size_t pos, end;
  uint32_t cur;
  int left, ff, err;
} onnxc_j2k_bits;

static uint32_t onnxc_j2k_bit(onnxc_j2k_bits *b) {
  if (b->left == 0) {
    if (b->pos >= b->end) {
      b->err = 1;
      return 0;
    }
    b->left = b->ff ? 7 : 8;    /* a byte after 0xFF has a stuffed zero MSB */
    b->cur = b->d[b->pos++];
    b->ff = b->cur == 0xFF;
  }
  b->left--;
  return (b->cur >> b->left) & 1;
}

static uint32_t onnxc_j2k_bitsn(onnxc_j2k_bits *b, int k) {
  uint32_t v = 0;
  for (int i = 0; i < k; i++)
    v = v << 1 | onnxc_j2k_bit(b);
  return v;
}

/* Tag tree (B.10.2): raises the lower bounds on the path from the root to
 * leaf (i, j) while they are below t; returns the leaf value if it is known
 * to be below t, else t. A node is its lower bound, plus 1 << 30 once known. */
static int32_t onnxc_j2k_tag(onnxc_j2k_bits *b, int32_t *node, int32_t w, int32_t h, int32_t i, int32_t j,
                             int32_t t) {
  uint32_t at[32];
  int n = 0;
  uint32_t base = 0;
  for (;;) {
    at[n++] = base + (uint32_t)(j * w + i);
    if ((w <= 1 && h <= 1) || n == 32)
      break;
    base += (uint32_t)w * (uint32_t)h;
    w = (w + 1) / 2, h = (h + 1) / 2, i /= 2, j /= 2;
  }
  int32_t low = 0, v = 0, known = 0;
  while (n-- > 0) {
    int32_t *nd = &node[at[n]];
    v = *nd & 0x3FFFFFFF, known = *nd >> 30;
    if (v < low)
      v = low;
    while (!known && v < t && !b->err) {
      if (onnxc_j2k_bit(b))
        known = 1;
      else
        v++;
    }
    *nd = v | known << 30;
    low = v;
  }
  return known && v < t ? v : t;
}

/* Number of coding passes (Table B.4). */
static int onnxc_j2k_npasses(onnxc_j2k_bits *b) {
  if (!onnxc_j2k_bit(b))
    return 1;
  if (!onnxc_j2k_bit(b))
    return 2;
  uint32_t v = onnxc_j2k_bitsn(b, 2);
  if (v < 3)
    return 3 + (int)v;
  v = onnxc_j2k_bitsn(b, 5);
  if (v < 31)
    return 6 + (int)v;
  return 37 + (int)onnxc_j2k_bitsn(b, 7);
}

/* Moves to the next tile-part's data when the current one is used up;
 * returns 0 when the tile has no more data. */
static int onnxc_j2k_more(onnxc_j2k *J) {
  while (J->pos >= J->re[J->part]) {
    if (J->part + 1 >= J->nparts)
      return 0;
    J->part++;
    J->pos = J->rs[J->part];
  }
  return 1;
}

/* One packet: header, then body. mode 0 adds each contribution's length to
 * its code-block; mode 1 copies the bytes to the code-block's gather area. */
static int onnxc_j2k_packet(onnxc_j2k *J, int c, int r, int32_t p, int layer, int mode) {
  const onnxc_j2k_res *R = &J->res[c][r];
  if (J->done || !onnxc_j2k_more(J)) {
    J->done = 1;   /* a truncated tile: what was read so far is decoded */
    return ONNXC_OK;
  }
  const uint8_t *d = J->cs;
  size_t end = J->re[J->part], pos = J->pos;
  if (J->t.sop && end - pos >= 6 && d[pos] == 0xFF && d[pos + 1] == 0x91)
    pos += 6;
  onnxc_j2k_bits bs = {d, pos, end, 0, 0, 0, 0};
  onnxc_j2k_pb *P = &J->pb[R->pb + (uint32_t)p * R->nbands];
  if (onnxc_j2k_bit(&bs)) {
    for (int b = 0; b < R->nbands; b++) {
      const onnxc_j2k_band *B = &R->band[b];
      int32_t *tt = J->tt + P[b].tt, *zt = tt + onnxc_j2k_ttnodes(P[b].ncbw, P[b].ncbh);
      for (int32_t j = 0; j < P[b].ncbh; j++)
        for (int32_t i = 0; i < P[b].ncbw; i++) {
          onnxc_j2k_cb *cb = &J->cb[P[b].cb + (uint32_t)(j * P[b].ncbw + i)];
          int inc;
          if (cb->incl)
            inc = (int)onnxc_j2k_bit(&bs);
          else
            inc = onnxc_j2k_tag(&bs, tt, P[b].ncbw, P[b].ncbh, i, j, layer + 1) <= layer;
          if (bs.err)
            return ONNXC_ERR_BAD_IMAGE;
          if (!inc)
            continue;
          if (!cb->incl) {
            int32_t z = onnxc_j2k_tag(&bs, zt, P[b].ncbw, P[b].ncbh, i, j, 64);
            if (z > B->mb)
              return ONNXC_ERR_BAD_IMAGE;
            cb->zbp = (uint8_t)z, cb->incl = 1, cb->lblock = 3;
          }
          int np = onnxc_j2k_npasses(&bs);
          while (onnxc_j2k_bit(&bs) && !bs.err)
            if (++cb->lblock > 32)
              return ONNXC_ERR_BAD_IMAGE;
          int nbits = cb->lblock;
          for (int k = np; k > 1; k >>= 1)
            nbits++;
          if (nbits > 32 || cb->passes + np > 255 || bs.err)
            return ONNXC_ERR_BAD_IMAGE;
          cb->cur = onnxc_j2k_bitsn(&bs, nbits);
          cb->passes = (uint8_t)(cb->passes + np);
          if (bs.err)
            return ONNXC_ERR_BAD_IMAGE;
        }
    }
  }
  if (bs.err)
    return ONNXC_ERR_BAD_IMAGE;
  pos = bs.pos;
  if (bs.ff) {   /* the header's last byte may not be 0xFF: a stuffed byte follows */
    if (pos >= end)
      return ONNXC_ERR_BAD_IMAGE;
    pos++;
  }
  if (J->t.eph && end - pos >= 2 && d[pos] == 0xFF && d[pos + 1] == 0x92)
    pos += 2;
  for (int b = 0; b < R->nbands; b++)
    for (uint32_t k = 0; k < (uint32_t)(P[b].ncbw * P[b].ncbh); k++) {
      onnxc_j2k_cb *cb = &J->cb[P[b].cb + k];
      if (!cb->cur)
        continue;
      if (end - pos < cb->cur)
        return ONNXC_ERR_BAD_IMAGE;
      if (mode == 0) {
        if (cb->len + cb->cur < cb->len)
          return ONNXC_ERR_BAD_IMAGE;
        cb->len += cb->cur;
      } else {
        if (cb->fill + cb->cur > cb->len)
          return ONNXC_ERR_BAD_IMAGE;
        for (uint32_t q = 0; q < cb->cur; q++)
          J->gather[cb->off + cb->fill + q] = d[pos + q];
        cb->fill += cb->cur;
      }
      pos += cb->cur;
      cb->cur = 0;
    }
  J->pos = pos;
  return ONNXC_OK;
}

/* Whether a precinct of resolution r of component c starts at reference-grid
 * point (x, y) (B.12.1.3); sets its index. */
static int onnxc_j2k_prec_at(const onnxc_j2k *J, int c, int r, int64_t x, int64_t y, int32_t *p) {
  const onnxc_j2k_res *R = &J->res[c][r];
  int s = J->t.c[c].levels - r;
  if (R->npw == 0 || R->nph == 0)
    return 0;
  int64_t mx = (int64_t)1 << (R->ppx + s), my = (int64_t)1 << (R->ppy + s);
  int okx = x % mx == 0 || (x == J->tx0 && ((int64_t)R->x0 << s) % mx != 0);
  int oky = y % my == 0 || (y == J->ty0 && ((int64_t)R->y0 << s) % my != 0);
  if (!okx || !oky)
    return 0;
  int64_t px = (onnxc_j2k_ceilshr(x, s) >> R->ppx) - (R->x0 >> R->ppx);
  int64_t py = (onnxc_j2k_ceilshr(y, s) >> R->ppy) - (R->y0 >> R->ppy);
  if (px < 0 || py < 0 || px >= R->npw || py >= R->nph)
    return 0;
  *p = (int32_t)(px + py * R->npw);
  return 1;
}

/* All packets of the tile in its progression order (B.12). */
static int onnxc_j2k_packets(onnxc_j2k *J, int mode) {
  int L = J->t.layers, maxr = 0, rc = ONNXC_OK;
  int64_t xstep = (int64_t)1 << 62, ystep = (int64_t)1 << 62;
  for (int c = 0; c < J->nc; c++) {
    int NL = J->t.c[c].levels;
    if (NL + 1 > maxr)
      maxr = NL + 1;
    for (int r = 0; r <= NL; r++) {
      int64_t sx = (int64_t)1 << (J->res[c][r].ppx + NL - r), sy = (int64_t)1 << (J->res[c][r].ppy + NL - r);
      xstep = sx < xstep ? sx : xstep, ystep = sy < ystep ? sy : ystep;
    }
  }
  J->part = 0, J->pos = J->rs[0], J->done = 0;
  int prog = J->t.prog;
  if (prog <= 1) {   /* LRCP, RLCP */
    for (int a = 0; a < (prog == 0 ? L : maxr); a++)
      for (int e = 0; e < (prog == 0 ? maxr : L); e++)
        for (int c = 0; c < J->nc; c++) {
          int l = prog == 0 ? a : e, r = prog == 0 ? e : a;
          if (r > J->t.c[c].levels)
            continue;
          const onnxc_j2k_res *R = &J->res[c][r];
          for (int32_t p = 0; p < R->npw * R->nph && rc == ONNXC_OK; p++)
            rc = onnxc_j2k_packet(J, c, r, p, l, mode);
          if (rc != ONNXC_OK || J->done)
            return rc;
        }
    return ONNXC_OK;
  }
  /* RPCL, PCRL, CPRL: o, then the positions, then a, then e, then layers;
   * o is r / unused / c, a is c / c / unused, e is unused / r / r. */
  int n0 = prog == 2 ? maxr : prog == 3 ? 1 : J->nc;
  for (int o = 0; o < n0; o++)
    for (int64_t y = J->ty0; y < J->ty1; y = (y / ystep + 1) * ystep)
      for (int64_t x = J->tx0; x < J->tx1; x = (x / xstep + 1) * xstep)
        for (int a = 0; a < (prog == 2 ? J->nc : prog == 3 ? J->nc : 1); a++)
          for (int e = 0; e < (prog == 2 ? 1 : maxr); e++) {
            int c = prog == 2 ? a : prog == 3 ? a : o;
            int r = prog == 2 ? o : e;
            int32_t p;
            if (r > J->t.c[c].levels || !onnxc_j2k_prec_at(J, c, r, x, y, &p))
              continue;
            for (int l = 0; l < L && rc == ONNXC_OK; l++)
              rc = onnxc_j2k_packet(J, c, r, p, l, mode);
            if (rc != ONNXC_OK || J->done)
              return rc;
          }
  return ONNXC_OK;
}

/* ---- MQ decoder (Annex C) ------------------------------------------------- */

typedef struct onnxc_mq {
  const uint8_t *d;
  uint32_t len, pos, c, a;
  int ct;
} onnxc_mq;

/* Qe, next state after an MPS, after an LPS, and whether an LPS switches the MPS
 * (Table C.2). */
static const uint16_t onnxc_mq_qe[47] = {
    0x5601, 0x3401, 0x1801, 0x0AC1, 0x0521, 0x0221, 0x5601, 0x5401, 0x4801, 0x3801, 0x3001, 0x2401,
    0x1C01, 0x1601, 0x5601, 0x5401, 0x5101, 0x4801, 0x3801, 0x3401, 0x3001, 0x2801, 0x2401, 0x2201,
    0x1C01, 0x1801, 0x1601, 0x1401, 0x1201, 0x1101, 0x0AC1, 0x09C1, 0x08A1, 0x0521, 0x0441, 0x02A1,
    0x0221, 0x0141, 0x0111, 0x0085, 0x0049, 0x0025, 0x0015, 0x0009, 0x0005, 0x0001, 0x5601};
static const uint8_t onnxc_mq_nmps[47] = {1,  2,  3,  4,  5,  38, 7,  8,  9,  10, 11, 12, 13, 29, 15, 16,
                                          17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
                                          33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 45, 46};
static const uint8_t onnxc_mq_nlps[47] = {1,  6,  9,  12, 29, 33, 6,  14, 14, 14, 17, 18, 20, 21, 14, 14,
                                          15, 16, 17, 18, 19, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
                                          30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 46};

static uint32_t onnxc_mq_at(const onnxc_mq *m, uint32_t i) { return i < m->len ? m->d[i] : 0xFF; }

static void onnxc_mq_bytein(onnxc_mq *m) {
  if (onnxc_mq_at(m, m->pos) == 0xFF) {
    if (onnxc_mq_at(m, m->pos + 1) > 0x8F) {   /* a marker (or the end): feed 1s */
      m->c += 0xFF00;
      m->ct = 8;
    } else {
      m->pos++;
      m->c += onnxc_mq_at(m, m->pos) << 9;
      m->ct = 7;
    }
  } else {
    m->pos++;
    m->c += onnxc_mq_at(m, m->pos) << 8;
    m->ct = 8;
  }
}

static void onnxc_mq_init(onnxc_mq *m, const uint8_t *d, uint32_t len) {
  m->d = d, m->len = len, m->pos = 0;
  m->c = onnxc_mq_at(m, 0) << 16;
  onnxc_mq_bytein(m);
  m->c <<= 7;
  m->ct -= 7;
  m->a = 0x8000;
}

/* Decodes one decision in context *cx (state index << 1 | MPS). */
static int onnxc_mq_decode(onnxc_mq *m, uint8_t *cx) {
  int st = *cx >> 1, mps = *cx & 1, d;
  uint32_t qe = onnxc_mq_qe[st];
  int sw = st == 0 || st == 6 || st == 14;   /* SWITCH column of Table C.2 */
  m->a -= qe;
  if ((m->c >> 16) < qe) {
    if (m->a < qe) {
      d = mps;
      *cx = (uint8_t)(onnxc_mq_nmps[st] << 1 | mps);
    } else {
      d = !mps;
      *cx = (uint8_t)(onnxc_mq_nlps[st] << 1 | (mps ^ sw));
    }
    m->a = qe;
  } else {
    m->c -= qe << 16;
    if (m->a & 0x8000)
      return mps;
    if (m->a < qe) {
      d = !mps;
      *cx = (uint8_t)(onnxc_mq_nlps[st] << 1 | (mps ^ sw));
    } else {
      d = mps;
      *cx = (uint8_t)(onnxc_mq_nmps[st] << 1 | mps);
    }
  }
  do {   /* RENORMD */
    if (m->ct == 0)
      onnxc_mq_bytein(m);
    m->a <<= 1;
    m->c <<= 1;
    m->ct--;
  } while (!(m->a & 0x8000));
  return d;
}

/* ---- tier-1 code-block decoding (Annex D) --------------------------------- */

enum { ONNXC_T1_SIG = 1, ONNXC_T1_NEG = 2, ONNXC_T1_VIS = 4, ONNXC_T1_REF = 8 };
enum { ONNXC_T1_RL = 17, ONNXC_T1_UNI = 18 };

static void onnxc_t1_reset(uint8_t *cx) {
  for (int i = 0; i < 19; i++)
    cx[i] = 0;
  cx[0] = 4 << 1, cx[ONNXC_T1_RL] = 3 << 1, cx[ONNXC_T1_UNI] = 46 << 1;
}

/* Significant neighbours of the sample at f: horizontal, vertical, diagonal.
 * Under the vertically causal switch the row below a stripe does not count. */
static void onnxc_t1_nbr(const uint8_t *f, int s, int below, int *h, int *v, int *dg) {
  *h = (f[-1] & 1) + (f[1] & 1);
  *v = (f[-s] & 1) + (below ? f[s] & 1 : 0);
  *dg = (f[-s - 1] & 1) + (f[-s + 1] & 1) + (below ? (f[s - 1] & 1) + (f[s + 1] & 1) : 0);
}

/* Zero-coding context (Table D.1). */
static int onnxc_t1_zc(const uint8_t *f, int s, int below, int orient) {
  int h, v, d;
  onnxc_t1_nbr(f, s, below, &h, &v, &d);
  if (orient == 1) {   /* HL: horizontal and vertical swap roles */
    int t = h;
    h = v, v = t;
  }
  if (orient == 3) {
    int hv = h + v;
    if (d >= 3)
      return 8;
    if (d == 2)
      return hv >= 1 ? 7 : 6;
    if (d == 1)
      return hv >= 2 ? 5 : hv == 1 ? 4 : 3;
    return hv >= 2 ? 2 : hv;
  }
  if (h == 2)
    return 8;
  if (h == 1)
    return v >= 1 ? 7 : d >= 1 ? 6 : 5;
  if (v >= 1)
    return v == 2 ? 4 : 3;
  return d >= 2 ? 2 : d;
}

static int onnxc_t1_contrib(uint8_t f) { return (f & ONNXC_T1_SIG) ? ((f & ONNXC_T1_NEG) ? -1 : 1) : 0; }

/* Sign decoding (Tables D.2, D.3): returns ONNXC_T1_NEG or 0. */
static int onnxc_t1_sign(onnxc_mq *m, uint8_t *cx, const uint8_t *f, int s, int below) {
  int H = onnxc_t1_contrib(f[-1]) + onnxc_t1_contrib(f[1]);
  int V = onnxc_t1_contrib(f[-s]) + (below ? onnxc_t1_contrib(f[s]) : 0);
  H = H > 1 ? 1 : H < -1 ? -1 : H;
  V = V > 1 ? 1 : V < -1 ? -1 : V;
  int flip = H < 0 || (H == 0 && V < 0);
  if (flip)
    H = -H, V = -V;
  int ctx = H == 0 ? 9 + (V != 0) : 12 + V;
  return (onnxc_mq_decode(m, &cx[ctx]) ^ flip) ? ONNXC_T1_NEG : 0;
}

typedef struct onnxc_t1 {
  onnxc_mq mq;
  uint8_t cx[19];
  uint8_t *flag;   /* (w + 2) x (h + 2), border zero */
  uint32_t *mag;   /* magnitude x 2 at the midpoint of the known interval */
  int w, h, s, orient, vsc;
} onnxc_t1;

static void onnxc_t1_newsig(onnxc_t1 *T, uint8_t *f, uint32_t *mg, int p, int below) {
  *f = (uint8_t)(*f | ONNXC_T1_SIG | onnxc_t1_sign(&T->mq, T->cx, f, T->s, below));
  *mg = 3u << p;
}

/* One stripe-oriented pass over bit-plane p: 0 significance propagation,
 * 1 magnitude refinement, 2 cleanup. */
static void onnxc_t1_pass(onnxc_t1 *T, int kind, int p) {
  int s = T->s;
  for (int y0 = 0; y0 < T->h; y0 += 4) {
    int y1 = y0 + 4 < T->h ? y0 + 4 : T->h;
    for (int x = 0; x < T->w; x++) {
      int y = y0;
      if (kind == 2 && y1 - y0 == 4) {   /* run-length mode when four samples have all-zero contexts */
        int run = 1;
        for (int k = y0; k < y1 && run; k++) {
          const uint8_t *f = &T->flag[(k + 1) * s + x + 1];
          int h, v, d;
          onnxc_t1_nbr(f, s, !(T->vsc && k == y1 - 1), &h, &v, &d);
          run = !(*f & (ONNXC_T1_SIG | ONNXC_T1_VIS)) && h + v + d == 0;
        }
        if (run) {
          if (!onnxc_mq_decode(&T->mq, &T->cx[ONNXC_T1_RL]))
            continue;
          int k = onnxc_mq_decode(&T->mq, &T->cx[ONNXC_T1_UNI]) << 1;
          k |= onnxc_mq_decode(&T->mq, &T->cx[ONNXC_T1_UNI]);
          y = y0 + k;
          onnxc_t1_newsig(T, &T->flag[(y + 1) * s + x + 1], &T->mag[y * T->w + x], p,
                          !(T->vsc && y == y1 - 1));
          y++;
        }
      }
      for (; y < y1; y++) {
        uint8_t *f = &T->flag[(y + 1) * s + x + 1];
        uint32_t *mg = &T->mag[y * T->w + x];
        int below = !(T->vsc && y == y1 - 1 && y1 - y0 == 4);
        int h, v, d;
        if (kind == 0) {
          if (*f & ONNXC_T1_SIG)
            continue;
          onnxc_t1_nbr(f, s, below, &h, &v, &d);
          if (h + v + d == 0)
            continue;
          if (onnxc_mq_decode(&T->mq, &T->cx[onnxc_t1_zc(f, s, below, T->orient)]))
            onnxc_t1_newsig(T, f, mg, p, below);
          *f |= ONNXC_T1_VIS;
        } else if (kind == 1) {
          if ((*f & (ONNXC_T1_SIG | ONNXC_T1_VIS)) != ONNXC_T1_SIG)
            continue;
          onnxc_t1_nbr(f, s, below, &h, &v, &d);
          int ctx = (*f & ONNXC_T1_REF) ? 16 : h + v + d ? 15 : 14;
          if (onnxc_mq_decode(&T->mq, &T->cx[ctx]))
            *mg += 1u << p;
          else
            *mg -= 1u << p;
          *f |= ONNXC_T1_REF;
        } else {
          if (!(*f & (ONNXC_T1_SIG | ONNXC_T1_VIS)) &&
              onnxc_mq_decode(&T->mq, &T->cx[onnxc_t1_zc(f, s, below, T->orient)]))
            onnxc_t1_newsig(T, f, mg, p, below);
        }
      }
      if (kind == 2)
        for (int k = y0; k < y1; k++)
          T->flag[(k + 1) * s + x + 1] &= (uint8_t)~ONNXC_T1_VIS;
    }
  }
}

/* Decodes a code-block of w x h samples from its gathered bytes into the
 * tile plane at out (row stride ostride). */
static void onnxc_t1_block(onnxc_j2k *J, const onnxc_j2k_cb *cb, const onnxc_j2k_band *B, int style, int w,
                           int h, int32_t *out, ptrdiff_t ostride) {
  onnxc_t1 T;
  T.flag = J->flag, T.mag = J->mag, T.w = w, T.h = h, T.s = w + 2;
  T.orient = B->orient, T.vsc = (style & 8) != 0;
  for (int i = 0; i < (w + 2) * (h + 2); i++)
    T.flag[i] = 0;
  for (int i = 0; i < w * h; i++)
    T.mag[i] = 0;
  int planes = B->mb - cb->zbp;
  if (cb->passes > 0 && planes > 0) {
    onnxc_mq_init(&T.mq, J->gather + cb->off, cb->len);
    onnxc_t1_reset(T.cx);
    int p = planes - 1, kind = 2;
    for (int i = 0; i < cb->passes && p >= 0; i++) {
      onnxc_t1_pass(&T, kind, p);
      if (kind == 2 && (style & 0x20))   /* segmentation symbol 1010 */
        for (int k = 0; k < 4; k++)
          onnxc_mq_decode(&T.mq, &T.cx[ONNXC_T1_UNI]);
      if (style & 2)
        onnxc_t1_reset(T.cx);
      if (kind == 2)
        kind = 0, p--;
      else
        kind++;
    }
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int32_t v = (int32_t)(T.mag[y * w + x] >> 1);
      out[y * ostride + x] = (T.flag[(y + 1) * T.s + x + 1] & ONNXC_T1_NEG) ? -v : v;
    }
}

/* ---- inverse wavelet (Annex F) and colour (Annex G) ----------------------- */

static int32_t onnxc_j2k_mirror(int32_t i, int32_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; }

/* Lifting runs in 64 bits and saturates at +-2^30: valid data stays far
 * below (the 5/3 low-pass has unit DC gain); corrupt data cannot overflow. */
static int32_t onnxc_j2k_sat(int64_t v) {
  return (int32_t)(v > (1 << 30) ? (1 << 30) : v < -(1 << 30) ? -(1 << 30) : v);
}

/* 1D_SR with the 5/3 filter over n samples starting at absolute index i0:
 * low-pass samples first, then high-pass, in a with stride st. */
static void onnxc_j2k_idwt1(int32_t *a, ptrdiff_t st, int32_t n, int64_t i0, int32_t *t) {
  if (n == 1) {
    if (i0 & 1)
      a[0] /= 2;
    return;
  }
  int32_t e0 = (int32_t)(i0 & 1);   /* t[i] is even (low-pass) when (i + e0) is even */
  int32_t nl = (int32_t)((i0 + n + 1) / 2 - (i0 + 1) / 2);
  for (int32_t i = 0, lo = 0, hi = nl; i < n; i++)
    t[i] = ((i + e0) & 1) ? a[(hi++) * st] : a[(lo++) * st];
  for (int32_t i = e0; i < n; i += 2)
    t[i] = onnxc_j2k_sat(t[i] - (((int64_t)t[onnxc_j2k_mirror(i - 1, n)] + t[onnxc_j2k_mirror(i + 1, n)] + 2) >> 2));
  for (int32_t i = 1 - e0; i < n; i += 2)
    t[i] = onnxc_j2k_sat(t[i] + (((int64_t)t[onnxc_j2k_mirror(i - 1, n)] + t[onnxc_j2k_mirror(i + 1, n)]) >> 1));
  for (int32_t i = 0; i < n; i++)
    a[i * st] = t[i];
}

static void onnxc_j2k_idwt(onnxc_j2k *J, int c) {
  int32_t *pl = J->plane[c];
  ptrdiff_t st = (ptrdiff_t)(J->tx1 - J->tx0);
  for (int r = 1; r <= J->t.c[c].levels; r++) {
    const onnxc_j2k_res *R = &J->res[c][r];
    int32_t w = R->x1 - R->x0, h = R->y1 - R->y0;
    if (w == 0 || h == 0)
      continue;
    for (int32_t y = 0; y < h; y++)
      onnxc_j2k_idwt1(pl + y * st, 1, w, R->x0, J->line);
    for (int32_t x = 0; x < w; x++)
      onnxc_j2k_idwt1(pl + x, st, h, R->y0, J->line);
  }
}

/* ---- tiles ---------------------------------------------------------------- */

/* Decodes every code-block of the decoded components into their planes. */
static void onnxc_j2k_tier1(onnxc_j2k *J) {
  ptrdiff_t st = (ptrdiff_t)(J->tx1 - J->tx0);
  for (int c = 0; c < J->ndec; c++)
    for (int r = 0; r <= J->t.c[c].levels; r++) {
      const onnxc_j2k_res *R = &J->res[c][r];
      for (int32_t p = 0; p < R->npw * R->nph; p++)
        for (int b = 0; b < R->nbands; b++) {
          const onnxc_j2k_pb *P = &J->pb[R->pb + (uint32_t)p * R->nbands + (uint32_t)b];
          const onnxc_j2k_band *B = &R->band[b];
          for (int32_t j = 0; j < P->ncbh; j++)
            for (int32_t i = 0; i < P->ncbw; i++) {
              int64_t x0 = (int64_t)(P->cbx0 + i) << B->cbw, y0 = (int64_t)(P->cby0 + j) << B->cbh;
              int64_t x1 = x0 + ((int64_t)1 << B->cbw), y1 = y0 + ((int64_t)1 << B->cbh);
              x0 = x0 < B->x0 ? B->x0 : x0, y0 = y0 < B->y0 ? B->y0 : y0;
              x1 = x1 > B->x1 ? B->x1 : x1, y1 = y1 > B->y1 ? B->y1 : y1;
              if (x0 >= x1 || y0 >= y1)
                continue;
              int32_t *out = J->plane[c] + (B->oy + (y0 - B->y0)) * st + B->ox + (x0 - B->x0);
              onnxc_t1_block(J, &J->cb[P->cb + (uint32_t)(j * P->ncbw + i)], B, J->t.c[c].style,
                             (int)(x1 - x0), (int)(y1 - y0), out, st);
            }
        }
    }
}

static void onnxc_j2k_reset_state(onnxc_j2k *J) {
  for (uint32_t i = 0; i < J->ncb; i++) {
    onnxc_j2k_cb *cb = &J->cb[i];
    cb->fill = cb->cur = 0, cb->incl = cb->lblock = cb->zbp = cb->passes = 0;
  }
  for (uint32_t i = 0; i < J->ntt; i++)
    J->tt[i] = 0;
}

static uint8_t onnxc_j2k_clamp(int64_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

static int onnxc_j2k_tile(onnxc_j2k *J, int tno, uint8_t *px, int fmt) {
  int tx = tno % J->ntx, ty = tno / J->ntx;
  int64_t a;
  a = J->TX0 + tx * J->TW, J->tx0 = a > J->X0 ? a : J->X0;
  a = J->TX0 + (tx + 1) * J->TW, J->tx1 = a < J->X1 ? a : J->X1;
  a = J->TY0 + ty * J->TH, J->ty0 = a > J->Y0 ? a : J->Y0;
  a = J->TY0 + (ty + 1) * J->TH, J->ty1 = a < J->Y1 ? a : J->Y1;
  for (int c = 0; c < J->nc; c++)
    if (J->t.c[c].rev != 1)
      return ONNXC_ERR_UNSUPPORTED;   /* the 9/7 wavelet */
    else if (J->t.c[c].style & 0xC5)
      return ONNXC_ERR_UNSUPPORTED;   /* BYPASS, TERMALL, high-throughput */
  int mct = J->t.mct && J->nc >= 3;
  if (J->t.mct && J->nc < 3)
    return ONNXC_ERR_BAD_IMAGE;
  int rc = onnxc_j2k_layout(J, 0);
  if (rc != ONNXC_OK)
    return rc;
  int64_t tw = J->tx1 - J->tx0, th = J->ty1 - J->ty0;
  for (int c = 0; c < J->nc; c++)
    J->res[c] = (onnxc_j2k_res *)onnxc_j2k_alloc(J, sizeof(onnxc_j2k_res) * (size_t)(J->t.c[c].levels + 1));
  J->pb = (onnxc_j2k_pb *)onnxc_j2k_alloc(J, sizeof(onnxc_j2k_pb) * J->npb);
  J->cb = (onnxc_j2k_cb *)onnxc_j2k_alloc(J, sizeof(onnxc_j2k_cb) * J->ncb);
  J->tt = (int32_t *)onnxc_j2k_alloc(J, sizeof(int32_t) * J->ntt);
  for (int c = 0; c < J->ndec; c++)
    J->plane[c] = (int32_t *)onnxc_j2k_alloc(J, sizeof(int32_t) * (size_t)(tw * th));
  J->line = (int32_t *)onnxc_j2k_alloc(J, sizeof(int32_t) * (size_t)(tw > th ? tw : th));
  J->mag = (uint32_t *)onnxc_j2k_alloc(J, sizeof(uint32_t) * 4096);
  J->flag = (uint8_t *)onnxc_j2k_alloc(J, 8192);
  for (int c = 0; c < J->nc; c++)
    if (!J->res[c])
      return ONNXC_ERR_UNSUPPORTED;
  for (int c = 0; c < J->ndec; c++)
    if (!J->plane[c])
      return ONNXC_ERR_UNSUPPORTED;
  if (!J->pb || !J->cb || !J->tt || !J->line || !J->mag || !J->flag)
    return ONNXC_ERR_UNSUPPORTED;   /* more than the scratch the model was given */
  if ((rc = onnxc_j2k_layout(J, 1)) != ONNXC_OK)
    return rc;
  /* Packets twice: code-block lengths, then their bytes gathered contiguously. */
  onnxc_j2k_reset_state(J);
  for (uint32_t i = 0; i < J->ncb; i++)
    J->cb[i].len = 0;
  if ((rc = onnxc_j2k_packets(J, 0)) != ONNXC_OK)
    return rc;
  uint32_t total = 0;
  for (uint32_t i = 0; i < J->ncb; i++) {
    J->cb[i].off = total;
    total += J->cb[i].len;   /* lengths come from disjoint bytes of the input: no overflow */
  }
  J->gather = (uint8_t *)onnxc_j2k_alloc(J, total ? total : 1);
  if (!J->gather)
    return ONNXC_ERR_UNSUPPORTED;
  onnxc_j2k_reset_state(J);
  if ((rc = onnxc_j2k_packets(J, 1)) != ONNXC_OK)
    return rc;
  for (int c = 0; c < J->ndec; c++)
    for (int64_t i = 0; i < tw * th; i++)
      J->plane[c][i] = 0;
  onnxc_j2k_tier1(J);
  for (int c = 0; c < J->ndec; c++)
    onnxc_j2k_idwt(J, c);
  /* Inverse RCT, DC level shift, and the output pixels. */
  long W = (long)(J->X1 - J->X0);
  for (int64_t y = 0; y < th; y++)
    for (int64_t x = 0; x < tw; x++) {
      int64_t i = y * tw + x;
      int64_t v0 = J->plane[0][i], v1 = J->ndec == 3 ? J->plane[1][i] : v0, v2 = J->ndec == 3 ? J->plane[2][i] : v0;
      if (mct) {
        int64_t g = v0 - ((v1 + v2) >> 2);
        v0 = v2 + g, v2 = v1 + g, v1 = g;
      }
      int r = onnxc_j2k_clamp(v0 + 128), g = onnxc_j2k_clamp(v1 + 128), b = onnxc_j2k_clamp(v2 + 128);
      long oy = (long)(J->ty0 + y - J->Y0), ox = (long)(J->tx0 + x - J->X0);
      if (fmt == 2) {   /* ONNXC_PIX_GRAY: ITU-R 601 luma as Pillow computes it */
        px[oy * W + ox] = J->ndec == 3 ? (uint8_t)((r * 19595L + g * 38470L + b * 7471L + 0x8000L) >> 16) : (uint8_t)r;
      } else {
        uint8_t *q = px + (oy * W + ox) * 3;
        q[0] = (uint8_t)(fmt == 1 ? b : r), q[1] = (uint8_t)g, q[2] = (uint8_t)(fmt == 1 ? r : b);
      }
    }
  return ONNXC_OK;
}

/* Reads the SOT segment at q: tile, part index, number of parts, end. */
static int onnxc_j2k_sot(const onnxc_j2k *J, size_t q, int *tile, int *tp, int *ntp, size_t *end) {
  size_t n = J->n;
  const uint8_t *s = J->cs + q;
  if (onnxc_j2k_be16(s + 2) != 10)
    return ONNXC_ERR_BAD_IMAGE;
  uint32_t isot = onnxc_j2k_be16(s + 4), psot = onnxc_j2k_be32(s + 6);
  *end = psot ? q + psot : (n >= 2 && onnxc_j2k_be16(J->cs + n - 2) == 0xFFD9 ? n - 2 : n);
  if ((psot && (psot < 14 || psot > n - q)) || *end < q + 14 || isot >= (uint32_t)(J->ntx * J->nty))
    return ONNXC_ERR_BAD_IMAGE;
  *tile = (int)isot, *tp = s[10], *ntp = s[11];
  return ONNXC_OK;
}

/* From tile tno's first tile-part at q, collects the data ranges of its
 * tile-parts (up to TNsot of them when that is known) and applies their
 * headers to J->t. */
static int onnxc_j2k_parts(onnxc_j2k *J, int tno, size_t q, int ntp) {
  int seen = 0;
  J->t = J->main;
  J->nparts = 0;
  while (q + 12 <= J->n && onnxc_j2k_be16(J->cs + q) == 0xFF90 && (ntp == 0 || J->nparts < ntp)) {
    int tile, tp, ntp2;
    size_t end;
    int rc = onnxc_j2k_sot(J, q, &tile, &tp, &ntp2, &end);
    if (rc != ONNXC_OK)
      return rc;
    if (tile == tno) {
      size_t pos = q + 12;
      if ((rc = onnxc_j2k_header(J, &J->t, &pos, end, 1, &seen)) != ONNXC_OK)
        return rc;
      if (J->nparts == ONNXC_J2K_MAXPARTS)
        return ONNXC_ERR_UNSUPPORTED;
      J->rs[J->nparts] = pos + 2, J->re[J->nparts] = end;
      J->nparts++;
    }
    q = end;
  }
  return ONNXC_OK;
}

/* Finds the codestream in a JP2 file (box structure of 15444-1 Annex I). */
static int onnxc_j2k_jp2(const uint8_t *d, size_t n, const uint8_t **cs, size_t *csn) {
  size_t pos = 0;
  while (n - pos >= 8) {
    uint64_t L = onnxc_j2k_be32(d + pos);
    uint32_t T = onnxc_j2k_be32(d + pos + 4);
    size_t hdr = 8;
    if (L == 1) {
      if (n - pos < 16 || onnxc_j2k_be32(d + pos + 8) != 0)
        return ONNXC_ERR_BAD_IMAGE;
      L = onnxc_j2k_be32(d + pos + 12), hdr = 16;
    } else if (L == 0) {
      L = n - pos;
    }
    if (L < hdr || L > n - pos)
      return ONNXC_ERR_BAD_IMAGE;
    if (T == 0x6A703263u) {   /* jp2c */
      *cs = d + pos + hdr, *csn = (size_t)L - hdr;
      return ONNXC_OK;
    }
    if (T == 0x6A703268u) {   /* jp2h: palettes and sYCC need colour conversions we do not do */
      for (size_t q = pos + hdr; q + 8 <= pos + L;) {
        uint32_t bl = onnxc_j2k_be32(d + q), bt = onnxc_j2k_be32(d + q + 4);
        if (bl < 8 || bl > pos + L - q)
          break;
        if (bt == 0x70636C72u)   /* pclr */
          return ONNXC_ERR_UNSUPPORTED;
        if (bt == 0x636F6C72u && bl >= 15 && d[q + 8] == 1 && onnxc_j2k_be32(d + q + 11) == 18)
          return ONNXC_ERR_UNSUPPORTED;   /* colr: sYCC */
        q += bl;
      }
    }
    pos += (size_t)L;
  }
  return ONNXC_ERR_BAD_IMAGE;
}

/* Decodes a JP2 file or J2K codestream into px (h x w, RGB / BGR when fmt is
 * 0 / 1, gray when 2: the ONNXC_PIX_* values of onnxc_image.h). */
static int onnxc_j2k_decode(const uint8_t *d, size_t n, uint8_t *px, long h, long w, int fmt, uint8_t *scratch,
                            size_t scratch_bytes) {
  const uint8_t *cs = d;
  size_t csn = n;
  if (n >= 12 && d[0] != 0xFF) {
    int rc = onnxc_j2k_jp2(d, n, &cs, &csn);
    if (rc != ONNXC_OK)
      return rc;
  }
  if (csn < 4 || onnxc_j2k_be16(cs) != 0xFF4F || onnxc_j2k_be16(cs + 2) != 0xFF51)
    return ONNXC_ERR_BAD_IMAGE;
  size_t skew = (size_t)((uintptr_t)scratch & 7) ? 8 - (size_t)((uintptr_t)scratch & 7) : 0;
  if (scratch_bytes < skew + sizeof(onnxc_j2k))
    return ONNXC_ERR_UNSUPPORTED;
  onnxc_j2k *J = (onnxc_j2k *)(void *)(scratch + skew);
  for (size_t i = 0; i < sizeof(onnxc_j2k); i++)
    scratch[skew + i] = 0;
  J->arena = scratch + skew, J->cap = scratch_bytes - skew, J->used = sizeof(onnxc_j2k);
  J->cs = cs, J->n = csn;
  size_t L = onnxc_j2k_be16(cs + 4);
  if (L < 2 || csn - 4 < L)
    return ONNXC_ERR_BAD_IMAGE;
  int rc = onnxc_j2k_siz(J, cs + 6, L - 2, h, w);
  if (rc != ONNXC_OK)
    return rc;
  size_t pos = 4 + L;
  int seen = 0;
  if ((rc = onnxc_j2k_header(J, &J->main, &pos, csn, 0, &seen)) != ONNXC_OK)
    return rc;
  if (seen != 3)
    return ONNXC_ERR_BAD_IMAGE;   /* COD and QCD are required */
  /* Each tile is decoded at its first tile-part; a bitmap records which were. */
  int ntiles = J->ntx * J->nty, ndone = 0;
  uint8_t *done = (uint8_t *)onnxc_j2k_alloc(J, (size_t)ntiles / 8 + 1);
  if (!done)
    return ONNXC_ERR_UNSUPPORTED;
  for (int t = 0; t < ntiles / 8 + 1; t++)
    done[t] = 0;
  size_t mark = J->used;
  while (pos + 12 <= csn && onnxc_j2k_be16(cs + pos) == 0xFF90) {
    int tile, tp, ntp;
    size_t end;
    if ((rc = onnxc_j2k_sot(J, pos, &tile, &tp, &ntp, &end)) != ONNXC_OK)
      return rc;
    if (tp == 0 && !(done[tile / 8] >> (tile % 8) & 1)) {
      J->used = mark;
      if ((rc = onnxc_j2k_parts(J, tile, pos, ntp)) != ONNXC_OK)
        return rc;
      if ((rc = onnxc_j2k_tile(J, tile, px, fmt)) != ONNXC_OK)
        return rc;
      done[tile / 8] = (uint8_t)(done[tile / 8] | 1 << (tile % 8));
      ndone++;
    }
    pos = end;
  }
  return ndone == ntiles ? ONNXC_OK : ONNXC_ERR_BAD_IMAGE;
}

#endif
