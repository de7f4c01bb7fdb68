/* onnxc_webp.h - the WebP decoders of onnxc_image.h: lossy (VP8 key frame,
 * RFC 6386) and lossless (VP8L), bit for bit as libwebp decodes to RGB.
 *
 * Not a standalone header: onnxc_image.h includes it after its shared
 * helpers (onnxc_img_out, onnxc_img_put, the byte readers), and the build
 * splices its text there, so generated code still gets one file.
 */
#ifndef ONNXC_WEBP_H
#define ONNXC_WEBP_H

/* ---- WebP lossy (VP8 key frame, RFC 6386) ----------------------------------- */
/* Decodes the frame into Y/U/V planes padded to whole macroblocks, runs the
 * loop filter over the whole frame (intra prediction reads unfiltered pixels,
 * as in libvpx and libwebp), then converts to RGB with libwebp's defaults:
 * "fancy" upsampling, (9,3,3,1)/16 of the nearest chroma samples, and its
 * 14-bit fixed-point BT.601 formulas. Mode numbering follows libwebp's
 * DC TM VE HE RD VR LD VL HD HU, which the subblock probability table uses. */

/* Section 13.5: default token probabilities [type 4][band 8][context 3][node 11]. */
static const uint8_t onnxc_vp8_coef_default[1056] = {
  128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128,
  128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 253, 136, 254,
  255, 228, 219, 128, 128, 128, 128, 128, 189, 129, 242, 255, 227, 213, 255, 219, 128, 128,
  128, 106, 126, 227, 252, 214, 209, 255, 255, 128, 128, 128, 1, 98, 248, 255, 236, 226,
  255, 255, 128, 128, 128, 181, 133, 238, 254, 221, 234, 255, 154, 128, 128, 128, 78, 134,
  202, 247, 198, 180, 255, 219, 128, 128, 128, 1, 185, 249, 255, 243, 255, 128, 128, 128,
  128, 128, 184, 150, 247, 255, 236, 224, 128, 128, 128, 128, 128, 77, 110, 216, 255, 236,
  230, 128, 128, 128, 128, 128, 1, 101, 251, 255, 241, 255, 128, 128, 128, 128, 128, 170,
  139, 241, 252, 236, 209, 255, 255, 128, 128, 128, 37, 116, 196, 243, 228, 255, 255, 255,
  128, 128, 128, 1, 204, 254, 255, 245, 255, 128, 128, 128, 128, 128, 207, 160, 250, 255,
  238, 128, 128, 128, 128, 128, 128, 102, 103, 231, 255, 211, 171, 128, 128, 128, 128, 128,
  1, 152, 252, 255, 240, 255, 128, 128, 128, 128, 128, 177, 135, 243, 255, 234, 225, 128,
  128, 128, 128, 128, 80, 129, 211, 255, 194, 224, 128, 128, 128, 128, 128, 1, 1, 255,
  128, 128, 128, 128, 128, 128, 128, 128, 246, 1, 255, 128, 128, 128, 128, 128, 128, 128,
  128, 255, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 198, 35, 237, 223, 193, 187,
  162, 160, 145, 155, 62, 131, 45, 198, 221, 172, 176, 220, 157, 252, 221, 1, 68, 47,
  146, 208, 149, 167, 221, 162, 255, 223, 128, 1, 149, 241, 255, 221, 224, 255, 255, 128,
  128, 128, 184, 141, 234, 253, 222, 220, 255, 199, 128, 128, 128, 81, 99, 181, 242, 176,
  190, 249, 202, 255, 255, 128, 1, 129, 232, 253, 214, 197, 242, 196, 255, 255, 128, 99,
  121, 210, 250, 201, 198, 255, 202, 128, 128, 128, 23, 91, 163, 242, 170, 187, 247, 210,
  255, 255, 128, 1, 200, 246, 255, 234, 255, 128, 128, 128, 128, 128, 109, 178, 241, 255,
  231, 245, 255, 255, 128, 128, 128, 44, 130, 201, 253, 205, 192, 255, 255, 128, 128, 128,
  1, 132, 239, 251, 219, 209, 255, 165, 128, 128, 128, 94, 136, 225, 251, 218, 190, 255,
  255, 128, 128, 128, 22, 100, 174, 245, 186, 161, 255, 199, 128, 128, 128, 1, 182, 249,
  255, 232, 235, 128, 128, 128, 128, 128, 124, 143, 241, 255, 227, 234, 128, 128, 128, 128,
  128, 35, 77, 181, 251, 193, 211, 255, 205, 128, 128, 128, 1, 157, 247, 255, 236, 231,
  255, 255, 128, 128, 128, 121, 141, 235, 255, 225, 227, 255, 255, 128, 128, 128, 45, 99,
  188, 251, 195, 217, 255, 224, 128, 128, 128, 1, 1, 251, 255, 213, 255, 128, 128, 128,
  128, 128, 203, 1, 248, 255, 255, 128, 128, 128, 128, 128, 128, 137, 1, 177, 255, 224,
  255, 128, 128, 128, 128, 128, 253, 9, 248, 251, 207, 208, 255, 192, 128, 128, 128, 175,
  13, 224, 243, 193, 185, 249, 198, 255, 255, 128, 73, 17, 171, 221, 161, 179, 236, 167,
  255, 234, 128, 1, 95, 247, 253, 212, 183, 255, 255, 128, 128, 128, 239, 90, 244, 250,
  211, 209, 255, 255, 128, 128, 128, 155, 77, 195, 248, 188, 195, 255, 255, 128, 128, 128,
  1, 24, 239, 251, 218, 219, 255, 205, 128, 128, 128, 201, 51, 219, 255, 196, 186, 128,
  128, 128, 128, 128, 69, 46, 190, 239, 201, 218, 255, 228, 128, 128, 128, 1, 191, 251,
  255, 255, 128, 128, 128, 128, 128, 128, 223, 165, 249, 255, 213, 255, 128, 128, 128, 128,
  128, 141, 124, 248, 255, 255, 128, 128, 128, 128, 128, 128, 1, 16, 248, 255, 255, 128,
  128, 128, 128, 128, 128, 190, 36, 230, 255, 236, 255, 128, 128, 128, 128, 128, 149, 1,
  255, 128, 128, 128, 128, 128, 128, 128, 128, 1, 226, 255, 128, 128, 128, 128, 128, 128,
  128, 128, 247, 192, 255, 128, 128, 128, 128, 128, 128, 128, 128, 240, 128, 255, 128, 128,
  128, 128, 128, 128, 128, 128, 1, 134, 252, 255, 255, 128, 128, 128, 128, 128, 128, 213,
  62, 250, 255, 255, 128, 128, 128, 128, 128, 128, 55, 93, 255, 128, 128, 128, 128, 128,
  128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128,
  128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128,
  202, 24, 213, 235, 186, 191, 220, 160, 240, 175, 255, 126, 38, 182, 232, 169, 184, 228,
  174, 255, 187, 128, 61, 46, 138, 219, 151, 178, 240, 170, 255, 216, 128, 1, 112, 230,
  250, 199, 191, 247, 159, 255, 255, 128, 166, 109, 228, 252, 211, 215, 255, 174, 128, 128,
  128, 39, 77, 162, 232, 172, 180, 245, 178, 255, 255, 128, 1, 52, 220, 246, 198, 199,
  249, 220, 255, 255, 128, 124, 74, 191, 243, 183, 193, 250, 221, 255, 255, 128, 24, 71,
  130, 219, 154, 170, 243, 182, 255, 255, 128, 1, 182, 225, 249, 219, 240, 255, 224, 128,
  128, 128, 149, 150, 226, 252, 216, 205, 255, 171, 128, 128, 128, 28, 108, 170, 242, 183,
  194, 254, 223, 255, 255, 128, 1, 81, 230, 252, 204, 203, 255, 192, 128, 128, 128, 123,
  102, 209, 247, 188, 196, 255, 233, 128, 128, 128, 20, 95, 153, 243, 164, 173, 255, 203,
  128, 128, 128, 1, 222, 248, 255, 216, 213, 128, 128, 128, 128, 128, 168, 175, 246, 252,
  235, 205, 255, 255, 128, 128, 128, 47, 116, 215, 255, 211, 212, 255, 255, 128, 128, 128,
  1, 121, 236, 253, 212, 214, 255, 255, 128, 128, 128, 141, 84, 213, 252, 201, 202, 255,
  219, 128, 128, 128, 42, 80, 160, 240, 162, 185, 255, 205, 128, 128, 128, 1, 1, 255,
  128, 128, 128, 128, 128, 128, 128, 128, 244, 1, 255, 128, 128, 128, 128, 128, 128, 128,
  128, 238, 1, 255, 128, 128, 128, 128, 128, 128, 128, 128,
};
/* Section 13.4: probabilities that a token probability is updated. */
static const uint8_t onnxc_vp8_coef_update[1056] = {
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 176, 246, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 223, 241, 252, 255, 255, 255, 255, 255, 255, 255,
  255, 249, 253, 253, 255, 255, 255, 255, 255, 255, 255, 255, 255, 244, 252, 255, 255, 255,
  255, 255, 255, 255, 255, 234, 254, 254, 255, 255, 255, 255, 255, 255, 255, 255, 253, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 246, 254, 255, 255, 255, 255, 255, 255,
  255, 255, 239, 253, 254, 255, 255, 255, 255, 255, 255, 255, 255, 254, 255, 254, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 248, 254, 255, 255, 255, 255, 255, 255, 255, 255, 251,
  255, 254, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 253, 254, 255, 255, 255, 255, 255, 255, 255, 255, 251, 254, 254, 255,
  255, 255, 255, 255, 255, 255, 255, 254, 255, 254, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 254, 253, 255, 254, 255, 255, 255, 255, 255, 255, 250, 255, 254, 255, 254, 255, 255,
  255, 255, 255, 255, 254, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 217, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 225, 252, 241, 253, 255, 255, 254, 255, 255, 255, 255, 234, 250,
  241, 250, 253, 255, 253, 254, 255, 255, 255, 255, 254, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 223, 254, 254, 255, 255, 255, 255, 255, 255, 255, 255, 238, 253, 254, 254, 255,
  255, 255, 255, 255, 255, 255, 255, 248, 254, 255, 255, 255, 255, 255, 255, 255, 255, 249,
  254, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 253, 255, 255, 255, 255, 255, 255, 255, 255, 255, 247, 254, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 253, 254, 255, 255, 255, 255, 255, 255, 255, 255, 252, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 254, 254,
  255, 255, 255, 255, 255, 255, 255, 255, 253, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 254, 253, 255, 255, 255,
  255, 255, 255, 255, 255, 250, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 254, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 186, 251, 250, 255, 255, 255, 255, 255, 255, 255, 255, 234,
  251, 244, 254, 255, 255, 255, 255, 255, 255, 255, 251, 251, 243, 253, 254, 255, 254, 255,
  255, 255, 255, 255, 253, 254, 255, 255, 255, 255, 255, 255, 255, 255, 236, 253, 254, 255,
  255, 255, 255, 255, 255, 255, 255, 251, 253, 253, 254, 254, 255, 255, 255, 255, 255, 255,
  255, 254, 254, 255, 255, 255, 255, 255, 255, 255, 255, 254, 254, 254, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 254, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 254, 254, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 254, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 254, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  248, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 250, 254, 252, 254, 255, 255, 255,
  255, 255, 255, 255, 248, 254, 249, 253, 255, 255, 255, 255, 255, 255, 255, 255, 253, 253,
  255, 255, 255, 255, 255, 255, 255, 255, 246, 253, 253, 255, 255, 255, 255, 255, 255, 255,
  255, 252, 254, 251, 254, 254, 255, 255, 255, 255, 255, 255, 255, 254, 252, 255, 255, 255,
  255, 255, 255, 255, 255, 248, 254, 253, 255, 255, 255, 255, 255, 255, 255, 255, 253, 255,
  254, 254, 255, 255, 255, 255, 255, 255, 255, 255, 251, 254, 255, 255, 255, 255, 255, 255,
  255, 255, 245, 251, 254, 255, 255, 255, 255, 255, 255, 255, 255, 253, 253, 254, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 251, 253, 255, 255, 255, 255, 255, 255, 255, 255, 252,
  253, 254, 255, 255, 255, 255, 255, 255, 255, 255, 255, 254, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 252, 255, 255, 255, 255, 255, 255, 255, 255, 255, 249, 255, 254, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 254, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 253, 255, 255, 255, 255, 255, 255, 255, 255, 250, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 254, 255, 255, 255, 255, 255, 255, 255, 255, 255,
  255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
};
/* Section 11.5: key-frame subblock mode probabilities [above 10][left 10][node 9]. */
static const uint8_t onnxc_vp8_bmode_prob[900] = {
  231, 120, 48, 89, 115, 113, 120, 152, 112, 152, 179, 64, 126, 170, 118, 46, 70, 95,
  175, 69, 143, 80, 85, 82, 72, 155, 103, 56, 58, 10, 171, 218, 189, 17, 13, 152,
  114, 26, 17, 163, 44, 195, 21, 10, 173, 121, 24, 80, 195, 26, 62, 44, 64, 85,
  144, 71, 10, 38, 171, 213, 144, 34, 26, 170, 46, 55, 19, 136, 160, 33, 206, 71,
  63, 20, 8, 114, 114, 208, 12, 9, 226, 81, 40, 11, 96, 182, 84, 29, 16, 36,
  134, 183, 89, 137, 98, 101, 106, 165, 148, 72, 187, 100, 130, 157, 111, 32, 75, 80,
  66, 102, 167, 99, 74, 62, 40, 234, 128, 41, 53, 9, 178, 241, 141, 26, 8, 107,
  74, 43, 26, 146, 73, 166, 49, 23, 157, 65, 38, 105, 160, 51, 52, 31, 115, 128,
  104, 79, 12, 27, 217, 255, 87, 17, 7, 87, 68, 71, 44, 114, 51, 15, 186, 23,
  47, 41, 14, 110, 182, 183, 21, 17, 194, 66, 45, 25, 102, 197, 189, 23, 18, 22,
  88, 88, 147, 150, 42, 46, 45, 196, 205, 43, 97, 183, 117, 85, 38, 35, 179, 61,
  39, 53, 200, 87, 26, 21, 43, 232, 171, 56, 34, 51, 104, 114, 102, 29, 93, 77,
  39, 28, 85, 171, 58, 165, 90, 98, 64, 34, 22, 116, 206, 23, 34, 43, 166, 73,
  107, 54, 32, 26, 51, 1, 81, 43, 31, 68, 25, 106, 22, 64, 171, 36, 225, 114,
  34, 19, 21, 102, 132, 188, 16, 76, 124, 62, 18, 78, 95, 85, 57, 50, 48, 51,
  193, 101, 35, 159, 215, 111, 89, 46, 111, 60, 148, 31, 172, 219, 228, 21, 18, 111,
  112, 113, 77, 85, 179, 255, 38, 120, 114, 40, 42, 1, 196, 245, 209, 10, 25, 109,
  88, 43, 29, 140, 166, 213, 37, 43, 154, 61, 63, 30, 155, 67, 45, 68, 1, 209,
  100, 80, 8, 43, 154, 1, 51, 26, 71, 142, 78, 78, 16, 255, 128, 34, 197, 171,
  41, 40, 5, 102, 211, 183, 4, 1, 221, 51, 50, 17, 168, 209, 192, 23, 25, 82,
  138, 31, 36, 171, 27, 166, 38, 44, 229, 67, 87, 58, 169, 82, 115, 26, 59, 179,
  63, 59, 90, 180, 59, 166, 93, 73, 154, 40, 40, 21, 116, 143, 209, 34, 39, 175,
  47, 15, 16, 183, 34, 223, 49, 45, 183, 46, 17, 33, 183, 6, 98, 15, 32, 183,
  57, 46, 22, 24, 128, 1, 54, 17, 37, 65, 32, 73, 115, 28, 128, 23, 128, 205,
  40, 3, 9, 115, 51, 192, 18, 6, 223, 87, 37, 9, 115, 59, 77, 64, 21, 47,
  104, 55, 44, 218, 9, 54, 53, 130, 226, 64, 90, 70, 205, 40, 41, 23, 26, 57,
  54, 57, 112, 184, 5, 41, 38, 166, 213, 30, 34, 26, 133, 152, 116, 10, 32, 134,
  39, 19, 53, 221, 26, 114, 32, 73, 255, 31, 9, 65, 234, 2, 15, 1, 118, 73,
  75, 32, 12, 51, 192, 255, 160, 43, 51, 88, 31, 35, 67, 102, 85, 55, 186, 85,
  56, 21, 23, 111, 59, 205, 45, 37, 192, 55, 38, 70, 124, 73, 102, 1, 34, 98,
  125, 98, 42, 88, 104, 85, 117, 175, 82, 95, 84, 53, 89, 128, 100, 113, 101, 45,
  75, 79, 123, 47, 51, 128, 81, 171, 1, 57, 17, 5, 71, 102, 57, 53, 41, 49,
  38, 33, 13, 121, 57, 73, 26, 1, 85, 41, 10, 67, 138, 77, 110, 90, 47, 114,
  115, 21, 2, 10, 102, 255, 166, 23, 6, 101, 29, 16, 10, 85, 128, 101, 196, 26,
  57, 18, 10, 102, 102, 213, 34, 20, 43, 117, 20, 15, 36, 163, 128, 68, 1, 26,
  102, 61, 71, 37, 34, 53, 31, 243, 192, 69, 60, 71, 38, 73, 119, 28, 222, 37,
  68, 45, 128, 34, 1, 47, 11, 245, 171, 62, 17, 19, 70, 146, 85, 55, 62, 70,
  37, 43, 37, 154, 100, 163, 85, 160, 1, 63, 9, 92, 136, 28, 64, 32, 201, 85,
  75, 15, 9, 9, 64, 255, 184, 119, 16, 86, 6, 28, 5, 64, 255, 25, 248, 1,
  56, 8, 17, 132, 137, 255, 55, 116, 128, 58, 15, 20, 82, 135, 57, 26, 121, 40,
  164, 50, 31, 137, 154, 133, 25, 35, 218, 51, 103, 44, 131, 131, 123, 31, 6, 158,
  86, 40, 64, 135, 148, 224, 45, 183, 128, 22, 26, 17, 131, 240, 154, 14, 1, 209,
  45, 16, 21, 91, 64, 222, 7, 1, 197, 56, 21, 39, 155, 60, 138, 23, 102, 213,
  83, 12, 13, 54, 192, 255, 68, 47, 28, 85, 26, 85, 85, 128, 128, 32, 146, 171,
  18, 11, 7, 63, 144, 171, 4, 4, 246, 35, 27, 10, 146, 174, 171, 12, 26, 128,
  190, 80, 35, 99, 180, 80, 126, 54, 45, 85, 126, 47, 87, 176, 51, 41, 20, 32,
  101, 75, 128, 139, 118, 146, 116, 128, 85, 56, 41, 15, 176, 236, 85, 37, 9, 62,
  71, 30, 17, 119, 118, 255, 17, 18, 138, 101, 38, 60, 138, 55, 70, 43, 26, 142,
  146, 36, 19, 30, 171, 255, 97, 27, 20, 138, 45, 61, 62, 219, 1, 81, 188, 64,
  32, 41, 20, 117, 151, 142, 20, 21, 163, 112, 19, 12, 61, 195, 128, 48, 4, 24,
};
/* Section 14.1: dequantization factors by quantizer index. */
static const uint8_t onnxc_vp8_dc_q[128] = {
  4, 5, 6, 7, 8, 9, 10, 10, 11, 12, 13, 14, 15, 16, 17, 17,
  18, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24, 25, 25, 26, 27, 28,
  29, 30, 31, 32, 33, 34, 35, 36, 37, 37, 38, 39, 40, 41, 42, 43,
  44, 45, 46, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58,
  59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74,
  75, 76, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,
  91, 93, 95, 96, 98, 100, 101, 102, 104, 106, 108, 110, 112, 114, 116, 118,
  122, 124, 126, 128, 130, 132, 134, 136, 138, 140, 143, 145, 148, 151, 154, 157,
};
static const uint16_t onnxc_vp8_ac_q[128] = {
  4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
  20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
  36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51,
  52, 53, 54, 55, 56, 57, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76,
  78, 80, 82, 84, 86, 88, 90, 92, 94, 96, 98, 100, 102, 104, 106, 108,
  110, 112, 114, 116, 119, 122, 125, 128, 131, 134, 137, 140, 143, 146, 149, 152,
  155, 158, 161, 164, 167, 170, 173, 177, 181, 185, 189, 193, 197, 201, 205, 209,
  213, 217, 221, 225, 229, 234, 239, 245, 249, 254, 259, 264, 269, 274, 279, 284,
};

static const uint8_t onnxc_vp8_zigzag[16] = {0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15};
/* Band of each coefficient position; the 17th entry serves the position after the last. */
static const uint8_t onnxc_vp8_band[17] = {0, 1, 2, 3, 6, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 0};
/* Extra-bit probabilities of the DCT_CAT3..6 tokens, zero-terminated. */
static const uint8_t onnxc_vp8_cat[4][12] = {{173, 148, 140, 0},
                                             {176, 155, 140, 135, 0},
                                             {180, 157, 141, 134, 130, 0},
                                             {254, 254, 243, 230, 196, 177, 153, 140, 133, 130, 129, 0}};
/* Subblock mode tree (section 11.2, libwebp numbering): entry > 0 is the next node
 * pair, entry <= 0 is minus the mode. */
static const int8_t onnxc_vp8_btree[18] = {0,  1, -1, 2, -2, 3, 4, 6, -3,
                                           5, -4, -5, -6, 7, -7, 8, -8, -9};

/* Boolean entropy decoder (section 7); reads zeros past the end of its data. */
typedef struct onnxc_vp8_br {
  const uint8_t *p, *end;
  uint32_t value, range;
  int count;
} onnxc_vp8_br;

static uint32_t onnxc_vp8_byte(onnxc_vp8_br *b) { return b->p < b->end ? *b->p++ : 0; }

static void onnxc_vp8_br_init(onnxc_vp8_br *b, const uint8_t *p, size_t n) {
  b->p = p;
  b->end = p + n;
  b->value = onnxc_vp8_byte(b) << 8;
  b->value |= onnxc_vp8_byte(b);
  b->range = 255;
  b->count = 0;
}

static int onnxc_vp8_bool(onnxc_vp8_br *b, int prob) {
  uint32_t split = 1 + (((b->range - 1) * (uint32_t)prob) >> 8), big = split << 8;
  int bit = b->value >= big;
  if (bit) {
    b->range -= split;
    b->value -= big;
  } else {
    b->range = split;
  }
  while (b->range < 128) {
    b->value <<= 1;
    b->range <<= 1;
    if (++b->count == 8) {
      b->count = 0;
      b->value |= onnxc_vp8_byte(b);
    }
  }
  return bit;
}

static int onnxc_vp8_lit(onnxc_vp8_br *b, int bits) {
  int v = 0;
  while (bits-- > 0)
    v = 2 * v + onnxc_vp8_bool(b, 128);
  return v;
}

/* An optional signed header field: flag, magnitude, sign. */
static int onnxc_vp8_opt(onnxc_vp8_br *b, int bits) {
  if (!onnxc_vp8_bool(b, 128))
    return 0;
  int v = onnxc_vp8_lit(b, bits);
  return onnxc_vp8_bool(b, 128) ? -v : v;
}

static int onnxc_vp8_clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static uint8_t onnxc_vp8_px(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }
/* libwebp keeps coefficients in int16_t; wrap the same way on absurd input. */
static int16_t onnxc_vp8_i16(int v) { return (int16_t)((int)(((unsigned)v + 32768u) & 0xFFFFu) - 32768); }

typedef struct onnxc_vp8 {
  onnxc_vp8_br br, part[8];
  int nparts, mbw, mbh;
  int seg_map, filter_simple, level, sharpness, skip_on, skip_prob;
  int seg_lf[4];   /* filter level of each segment */
  int lf_ref, lf_mode; /* loop filter deltas for intra frames and for B_PRED */
  int dq[4][6];    /* per segment: y1 dc, y1 ac, y2 dc, y2 ac, uv dc, uv ac */
  uint8_t seg_prob[3];
  uint8_t coef[1056];
} onnxc_vp8;

/* Frame header after the start code (section 9 / 19.2). */
static int onnxc_vp8_header(onnxc_vp8 *v) {
  onnxc_vp8_br *b = &v->br;
  int seg_on, seg_abs = 0, seg_q[4] = {0, 0, 0, 0}, seg_f[4] = {0, 0, 0, 0};
  onnxc_vp8_lit(b, 2); /* colour space, clamping type */
  seg_on = onnxc_vp8_bool(b, 128);
  v->seg_map = 0;
  v->seg_prob[0] = v->seg_prob[1] = v->seg_prob[2] = 255;
  if (seg_on) {
    v->seg_map = onnxc_vp8_bool(b, 128);
    if (onnxc_vp8_bool(b, 128)) {
      seg_abs = onnxc_vp8_bool(b, 128);
      for (int s = 0; s < 4; s++)
        seg_q[s] = onnxc_vp8_opt(b, 7);
      for (int s = 0; s < 4; s++)
        seg_f[s] = onnxc_vp8_opt(b, 6);
    }
    if (v->seg_map)
      for (int s = 0; s < 3; s++)
        v->seg_prob[s] = (uint8_t)(onnxc_vp8_bool(b, 128) ? onnxc_vp8_lit(b, 8) : 255);
  }
  v->filter_simple = onnxc_vp8_bool(b, 128);
  v->level = onnxc_vp8_lit(b, 6);
  v->sharpness = onnxc_vp8_lit(b, 3);
  v->lf_ref = v->lf_mode = 0;
  int lf_on = onnxc_vp8_bool(b, 128);
  if (lf_on && onnxc_vp8_bool(b, 128)) {
    int ref[4], mode[4];
    for (int i = 0; i < 4; i++)
      ref[i] = onnxc_vp8_opt(b, 6);
    for (int i = 0; i < 4; i++)
      mode[i] = onnxc_vp8_opt(b, 6);
    v->lf_ref = ref[0];   /* intra frame */
    v->lf_mode = mode[0]; /* B_PRED */
  }
  for (int s = 0; s < 4; s++)
    v->seg_lf[s] = seg_on ? seg_f[s] + (seg_abs ? 0 : v->level) : v->level;
  v->nparts = 1 << onnxc_vp8_lit(b, 2);
  int q = onnxc_vp8_lit(b, 7), dy1 = onnxc_vp8_opt(b, 4), dy2 = onnxc_vp8_opt(b, 4);
  int dy2a = onnxc_vp8_opt(b, 4), duv = onnxc_vp8_opt(b, 4), duva = onnxc_vp8_opt(b, 4);
  for (int s = 0; s < 4; s++) {
    int qs = seg_on ? seg_q[s] + (seg_abs ? 0 : q) : q;
    int *m = v->dq[s];
    m[0] = onnxc_vp8_dc_q[onnxc_vp8_clampi(qs + dy1, 0, 127)];
    m[1] = onnxc_vp8_ac_q[onnxc_vp8_clampi(qs, 0, 127)];
    m[2] = onnxc_vp8_dc_q[onnxc_vp8_clampi(qs + dy2, 0, 127)] * 2;
    m[3] = onnxc_vp8_ac_q[onnxc_vp8_clampi(qs + dy2a, 0, 127)] * 155 / 100;
    if (m[3] < 8)
      m[3] = 8;
    m[4] = onnxc_vp8_dc_q[onnxc_vp8_clampi(qs + duv, 0, 117)];
    m[5] = onnxc_vp8_ac_q[onnxc_vp8_clampi(qs + duva, 0, 127)];
  }
  onnxc_vp8_bool(b, 128); /* refresh_entropy_probs: one frame only */
  for (int i = 0; i < 1056; i++)
    v->coef[i] = (uint8_t)(onnxc_vp8_bool(b, onnxc_vp8_coef_update[i]) ? onnxc_vp8_lit(b, 8)
                                                                       : onnxc_vp8_coef_default[i]);
  v->skip_on = onnxc_vp8_bool(b, 128);
  v->skip_prob = v->skip_on ? onnxc_vp8_lit(b, 8) : 0;
  return ONNXC_OK;
}

/* Tokens of one 4x4 block (section 13) into out[] (raster order, dequantized);
 * returns one past the position of the last token read, as libwebp does. */
static int onnxc_vp8_tokens(onnxc_vp8_br *b, const uint8_t *prob, int ctx, int dc_q, int ac_q,
                            int n, int16_t *out) {
  const uint8_t *p = prob + (onnxc_vp8_band[n] * 3 + ctx) * 11;
  for (; n < 16; n++) {
    if (!onnxc_vp8_bool(b, p[0]))
      return n; /* end of block */
    while (!onnxc_vp8_bool(b, p[1])) { /* zero */
      if (++n == 16)
        return 16;
      p = prob + onnxc_vp8_band[n] * 33;
    }
    int v, next;
    if (!onnxc_vp8_bool(b, p[2])) {
      v = 1;
      next = 1;
    } else {
      next = 2;
      if (!onnxc_vp8_bool(b, p[3])) {
        v = !onnxc_vp8_bool(b, p[4]) ? 2 : 3 + onnxc_vp8_bool(b, p[5]);
      } else if (!onnxc_vp8_bool(b, p[6])) {
        if (!onnxc_vp8_bool(b, p[7])) {
          v = 5 + onnxc_vp8_bool(b, 159);
        } else {
          v = 7 + 2 * onnxc_vp8_bool(b, 165);
          v += onnxc_vp8_bool(b, 145);
        }
      } else {
        int b1 = onnxc_vp8_bool(b, p[8]), b0 = onnxc_vp8_bool(b, p[9 + b1]), cat = 2 * b1 + b0;
        v = 0;
        for (const uint8_t *t = onnxc_vp8_cat[cat]; *t; t++)
          v = 2 * v + onnxc_vp8_bool(b, *t);
        v += 3 + (8 << cat);
      }
    }
    p = prob + (onnxc_vp8_band[n + 1] * 3 + next) * 11;
    if (onnxc_vp8_bool(b, 128))
      v = -v;
    out[onnxc_vp8_zigzag[n]] = onnxc_vp8_i16(v * (n > 0 ? ac_q : dc_q));
  }
  return 16;
}

/* Inverse Walsh-Hadamard transform of the Y2 block into the DC of the 16 luma blocks. */
static void onnxc_vp8_iwht(const int16_t *in, int16_t *coef) {
  int t[16];
  for (int i = 0; i < 4; i++) {
    int a0 = in[i] + in[12 + i], a1 = in[4 + i] + in[8 + i];
    int a2 = in[4 + i] - in[8 + i], a3 = in[i] - in[12 + i];
    t[i] = a0 + a1;
    t[8 + i] = a0 - a1;
    t[4 + i] = a3 + a2;
    t[12 + i] = a3 - a2;
  }
  for (int i = 0; i < 4; i++) {
    int dc = t[4 * i] + 3;
    int a0 = dc + t[4 * i + 3], a1 = t[4 * i + 1] + t[4 * i + 2];
    int a2 = t[4 * i + 1] - t[4 * i + 2], a3 = dc - t[4 * i + 3];
    coef[(4 * i + 0) * 16] = onnxc_vp8_i16((a0 + a1) >> 3);
    coef[(4 * i + 1) * 16] = onnxc_vp8_i16((a3 + a2) >> 3);
    coef[(4 * i + 2) * 16] = onnxc_vp8_i16((a0 - a1) >> 3);
    coef[(4 * i + 3) * 16] = onnxc_vp8_i16((a3 - a2) >> 3);
  }
}

static int onnxc_vp8_mul1(int a) { return ((a * 20091) >> 16) + a; } /* a * sqrt(2) cos(pi/8) */
static int onnxc_vp8_mul2(int a) { return (a * 35468) >> 16; }       /* a * sqrt(2) sin(pi/8) */

/* Inverse DCT (section 14.3) of in[16], added to the 4x4 prediction at dst. */
static void onnxc_vp8_idct_add(const int16_t *in, uint8_t *dst, int stride) {
  int t[16];
  for (int i = 0; i < 4; i++) { /* columns */
    int a = in[i] + in[8 + i], b = in[i] - in[8 + i];
    int c = onnxc_vp8_mul2(in[4 + i]) - onnxc_vp8_mul1(in[12 + i]);
    int d = onnxc_vp8_mul1(in[4 + i]) + onnxc_vp8_mul2(in[12 + i]);
    t[4 * i + 0] = a + d;
    t[4 * i + 1] = b + c;
    t[4 * i + 2] = b - c;
    t[4 * i + 3] = a - d;
  }
  for (int i = 0; i < 4; i++) { /* rows; t[4 * col + row] */
    int dc = t[i] + 4;
    int a = dc + t[8 + i], b = dc - t[8 + i];
    int c = onnxc_vp8_mul2(t[4 + i]) - onnxc_vp8_mul1(t[12 + i]);
    int d = onnxc_vp8_mul1(t[4 + i]) + onnxc_vp8_mul2(t[12 + i]);
    uint8_t *r = dst + i * stride;
    r[0] = onnxc_vp8_px(r[0] + ((a + d) >> 3));
    r[1] = onnxc_vp8_px(r[1] + ((b + c) >> 3));
    r[2] = onnxc_vp8_px(r[2] + ((b - c) >> 3));
    r[3] = onnxc_vp8_px(r[3] + ((a - d) >> 3));
  }
}

/* Workspace of one macroblock with its borders: luma rows -1..15 and columns
 * -1..19 (columns 16..19 of rows -1, 3, 7, 11 hold the above-right pixels of
 * the subblocks of column 3), then each chroma plane with rows and columns -1..7. */
enum { ONNXC_VP8_YS = 32, ONNXC_VP8_CS = 16, ONNXC_VP8_Y0 = ONNXC_VP8_YS + 1,
       ONNXC_VP8_U0 = 17 * ONNXC_VP8_YS + ONNXC_VP8_CS + 1, ONNXC_VP8_V0 = ONNXC_VP8_U0 + 9 * ONNXC_VP8_CS,
       ONNXC_VP8_WS = ONNXC_VP8_V0 + 8 * ONNXC_VP8_CS + 8 };

static int onnxc_vp8_avg3(int a, int b, int c) { return (a + 2 * b + c + 2) >> 2; }
static int onnxc_vp8_avg2(int a, int b) { return (a + b + 1) >> 1; }

/* Whole-block prediction (16x16 luma or 8x8 chroma, section 12.2): mode DC, TM,
 * VE or HE; DC uses only the edges inside the frame. */
static void onnxc_vp8_pred_mb(uint8_t *p, int s, int size, int mode, int has_top, int has_left) {
  const uint8_t *top = p - s;
  if (mode == 0) {
    int sum = 0, shift = size == 16 ? 3 : 2, dc = 128;
    for (int i = 0; i < size; i++)
      sum += (has_top ? top[i] : 0) + (has_left ? p[i * s - 1] : 0);
    if (has_top && has_left)
      dc = (sum + size) >> (shift + 2);
    else if (has_top || has_left)
      dc = (sum + size / 2) >> (shift + 1);
    for (int r = 0; r < size; r++)
      for (int c = 0; c < size; c++)
        p[r * s + c] = (uint8_t)dc;
    return;
  }
  for (int r = 0; r < size; r++)
    for (int c = 0; c < size; c++)
      p[r * s + c] = mode == 2   ? top[c]
                     : mode == 3 ? p[r * s - 1]
                                 : onnxc_vp8_px(p[r * s - 1] + top[c] - top[-1]);
}

/* Subblock prediction (section 12.3) of the 4x4 block at p. */
static void onnxc_vp8_pred_sub(uint8_t *p, int s, int mode) {
  const uint8_t *t = p - s; /* t[-1..7] */
  int e[9];                 /* L3 L2 L1 L0 P T0 T1 T2 T3 */
  int l[4] = {p[-1], p[s - 1], p[2 * s - 1], p[3 * s - 1]};
  for (int i = 0; i < 4; i++) {
    e[i] = l[3 - i];
    e[5 + i] = t[i];
  }
  e[4] = t[-1];
  for (int r = 0; r < 4; r++) {
    for (int c = 0; c < 4; c++) {
      int v, i = r + c, d = c - r;
      switch (mode) {
      case 0: /* DC */
        v = (t[0] + t[1] + t[2] + t[3] + l[0] + l[1] + l[2] + l[3] + 4) >> 3;
        break;
      case 1: /* TM */
        v = onnxc_vp8_px(l[r] + t[c] - t[-1]);
        break;
      case 2: /* VE */
        v = onnxc_vp8_avg3(t[c - 1], t[c], t[c + 1]);
        break;
      case 3: /* HE */
        v = onnxc_vp8_avg3(e[4 - r], e[3 - r], r == 3 ? e[0] : e[2 - r]);
        break;
      case 4: /* RD */
        v = onnxc_vp8_avg3(e[3 + d], e[4 + d], e[5 + d]);
        break;
      case 5: /* VR */
        if (c == 0 && r >= 2)
          v = onnxc_vp8_avg3(e[4 - r], e[5 - r], e[6 - r]);
        else if ((r & 1) == 0)
          v = onnxc_vp8_avg2(e[4 + c - r / 2], e[5 + c - r / 2]);
        else
          v = onnxc_vp8_avg3(e[3 + c - r / 2], e[4 + c - r / 2], e[5 + c - r / 2]);
        break;
      case 6: /* LD */
        v = i < 6 ? onnxc_vp8_avg3(t[i], t[i + 1], t[i + 2]) : onnxc_vp8_avg3(t[6], t[7], t[7]);
        break;
      case 7: /* VL */
        if (r == 2 && c == 3)
          v = onnxc_vp8_avg3(t[4], t[5], t[6]);
        else if (r == 3 && c == 3)
          v = onnxc_vp8_avg3(t[5], t[6], t[7]);
        else if ((r & 1) == 0)
          v = onnxc_vp8_avg2(t[c + r / 2], t[c + r / 2 + 1]);
        else
          v = onnxc_vp8_avg3(t[c + r / 2], t[c + r / 2 + 1], t[c + r / 2 + 2]);
        break;
      case 8: /* HD */
        if (r == 0 && c >= 2)
          v = onnxc_vp8_avg3(e[2 + c], e[3 + c], e[4 + c]);
        else if ((c & 1) == 0)
          v = onnxc_vp8_avg2(e[3 - r + c / 2], e[4 - r + c / 2]);
        else
          v = onnxc_vp8_avg3(e[3 - r + c / 2], e[4 - r + c / 2], e[5 - r + c / 2]);
        break;
      default: { /* HU */
        int k = 2 * r + c;
        if (k >= 6)
          v = l[3];
        else if (k == 5)
          v = onnxc_vp8_avg3(l[2], l[3], l[3]);
        else if ((k & 1) == 0)
          v = onnxc_vp8_avg2(l[k / 2], l[k / 2 + 1]);
        else
          v = onnxc_vp8_avg3(l[k / 2], l[k / 2 + 1], l[k / 2 + 2]);
        break;
      }
      }
      p[r * s + c] = (uint8_t)v;
    }
  }
}

/* Loop filters (section 15) across the edge between p[-step] and p[0]. */
static int onnxc_vp8_abs(int v) { return v < 0 ? -v : v; }
static int onnxc_vp8_s8(int v) { return onnxc_vp8_clampi(v, -128, 127); }

/* The common adjustment of p0 and q0; with outer taps it also uses p1 - q1. */
static void onnxc_vp8_filter2(uint8_t *p, long step, int outer) {
  int p1 = p[-2 * step], p0 = p[-step], q0 = p[0], q1 = p[step];
  int a = 3 * (q0 - p0) + (outer ? onnxc_vp8_s8(p1 - q1) : 0);
  int a1 = onnxc_vp8_clampi((a + 4) >> 3, -16, 15), a2 = onnxc_vp8_clampi((a + 3) >> 3, -16, 15);
  p[-step] = onnxc_vp8_px(p0 + a2);
  p[0] = onnxc_vp8_px(q0 - a1);
  if (!outer) {
    int a3 = (a1 + 1) >> 1;
    p[-2 * step] = onnxc_vp8_px(p1 + a3);
    p[step] = onnxc_vp8_px(q1 - a3);
  }
}

static int onnxc_vp8_edge_ok(const uint8_t *p, long step, int limit) {
  return 4 * onnxc_vp8_abs(p[-step] - p[0]) + onnxc_vp8_abs(p[-2 * step] - p[step]) <= 2 * limit + 1;
}

/* Simple filter: n pixels along the edge, `along` apart. */
static void onnxc_vp8_simple(uint8_t *p, long step, long along, int n, int limit) {
  for (int i = 0; i < n; i++, p += along)
    if (onnxc_vp8_edge_ok(p, step, limit))
      onnxc_vp8_filter2(p, step, 1);
}

/* Normal filter; mb selects the macroblock-edge variant that moves three pixels a side. */
static void onnxc_vp8_normal(uint8_t *p, long step, long along, int n, int limit, int ilimit,
                             int hev_t, int mb) {
  for (int i = 0; i < n; i++, p += along) {
    int p3 = p[-4 * step], p2 = p[-3 * step], p1 = p[-2 * step], p0 = p[-step];
    int q0 = p[0], q1 = p[step], q2 = p[2 * step], q3 = p[3 * step];
    if (!onnxc_vp8_edge_ok(p, step, limit) || onnxc_vp8_abs(p3 - p2) > ilimit ||
        onnxc_vp8_abs(p2 - p1) > ilimit || onnxc_vp8_abs(p1 - p0) > ilimit ||
        onnxc_vp8_abs(q3 - q2) > ilimit || onnxc_vp8_abs(q2 - q1) > ilimit ||
        onnxc_vp8_abs(q1 - q0) > ilimit)
      continue;
    if (onnxc_vp8_abs(p1 - p0) > hev_t || onnxc_vp8_abs(q1 - q0) > hev_t) {
      onnxc_vp8_filter2(p, step, 1);
    } else if (!mb) {
      onnxc_vp8_filter2(p, step, 0);
    } else {
      int w = onnxc_vp8_s8(3 * (q0 - p0) + onnxc_vp8_s8(p1 - q1));
      int a1 = (27 * w + 63) >> 7, a2 = (18 * w + 63) >> 7, a3 = (9 * w + 63) >> 7;
      p[-3 * step] = onnxc_vp8_px(p2 + a3);
      p[-2 * step] = onnxc_vp8_px(p1 + a2);
      p[-step] = onnxc_vp8_px(p0 + a1);
      p[0] = onnxc_vp8_px(q0 - a1);
      p[step] = onnxc_vp8_px(q1 - a2);
      p[2 * step] = onnxc_vp8_px(q2 - a3);
    }
  }
}

/* Filters one macroblock; info = segment | B_PRED << 2 | has inner edges << 3. */
static void onnxc_vp8_filter_mb(const onnxc_vp8 *v, uint8_t *pl[3], const long st[3], int mbx,
                                int mby, int info) {
  int level = v->seg_lf[info & 3];
  if (v->lf_ref || v->lf_mode)
    level += v->lf_ref + ((info & 4) ? v->lf_mode : 0);
  level = onnxc_vp8_clampi(level, 0, 63);
  if (level == 0)
    return;
  int ilevel = level;
  if (v->sharpness > 0) {
    ilevel >>= v->sharpness > 4 ? 2 : 1;
    if (ilevel > 9 - v->sharpness)
      ilevel = 9 - v->sharpness;
  }
  if (ilevel < 1)
    ilevel = 1;
  int limit = 2 * level + ilevel, hev_t = level >= 40 ? 2 : level >= 15 ? 1 : 0, inner = info & 8;
  for (int c = 0; c < (v->filter_simple ? 1 : 3); c++) {
    int sz = c ? 8 : 16;
    long s = st[c];
    uint8_t *p = pl[c] + (long)mby * sz * s + (long)mbx * sz;
    for (int dir = 0; dir < 2; dir++) { /* vertical edges first, then horizontal */
      long step = dir ? s : 1, along = dir ? 1 : s;
      if (dir ? mby > 0 : mbx > 0) {
        if (v->filter_simple)
          onnxc_vp8_simple(p, step, along, sz, limit + 4);
        else
          onnxc_vp8_normal(p, step, along, sz, limit + 4, ilevel, hev_t, 1);
      }
      for (int k = 4; inner && k < sz; k += 4) {
        if (v->filter_simple)
          onnxc_vp8_simple(p + k * step, step, along, sz, limit);
        else
          onnxc_vp8_normal(p + k * step, step, along, sz, limit, ilevel, hev_t, 0);
      }
    }
  }
}

/* Scratch of the VP8 decoder for an mbw x mbh macroblock frame. */
static size_t onnxc_vp8_scratch(long mbw, long mbh) {
  return (size_t)(mbw * mbh * 384 + mbw * mbh + 13 * mbw);
}

/* Decodes one macroblock's modes and residuals and reconstructs it into ws;
 * tops holds 4 subblock modes and 9 non-zero flags per macroblock column,
 * left the same for the macroblock to the left. Returns its filter info. */
static int onnxc_vp8_mb(onnxc_vp8 *v, onnxc_vp8_br *tb, uint8_t *ws, uint8_t *top, uint8_t *left,
                        int mbx, int mby) {
  onnxc_vp8_br *b = &v->br;
  int seg = 0, skip = 0, i4, ymode = 0, uvmode, nonzero = 0;
  uint8_t modes[16];
  int16_t coef[24 * 16];
  if (v->seg_map)
    seg = !onnxc_vp8_bool(b, v->seg_prob[0]) ? onnxc_vp8_bool(b, v->seg_prob[1])
                                              : 2 + onnxc_vp8_bool(b, v->seg_prob[2]);
  if (v->skip_on)
    skip = onnxc_vp8_bool(b, v->skip_prob);
  i4 = !onnxc_vp8_bool(b, 145);
  if (!i4) {
    ymode = onnxc_vp8_bool(b, 156) ? (onnxc_vp8_bool(b, 128) ? 1 : 3)
                                   : (onnxc_vp8_bool(b, 163) ? 2 : 0);
    for (int i = 0; i < 4; i++)
      top[i] = left[i] = (uint8_t)ymode;
  } else {
    for (int y = 0; y < 4; y++) {
      int m = left[y];
      for (int x = 0; x < 4; x++) {
        const uint8_t *prob = onnxc_vp8_bmode_prob + (top[x] * 10 + m) * 9;
        int i = onnxc_vp8_btree[onnxc_vp8_bool(b, prob[0])];
        while (i > 0)
          i = onnxc_vp8_btree[2 * i + onnxc_vp8_bool(b, prob[i])];
        m = -i;
        top[x] = (uint8_t)m;
        modes[4 * y + x] = (uint8_t)m;
      }
      left[y] = (uint8_t)m;
    }
  }
  uvmode = !onnxc_vp8_bool(b, 142) ? 0 : !onnxc_vp8_bool(b, 114) ? 2 : onnxc_vp8_bool(b, 183) ? 1 : 3;

  /* Residuals; nz flags: 0..3 luma columns/rows, 4..5 U, 6..7 V, 8 Y2. */
  uint8_t *tnz = top + 4, *lnz = left + 4;
  for (int i = 0; i < 24 * 16; i++)
    coef[i] = 0;
  const int *dq = v->dq[seg];
  if (!skip) {
    int first = 0, type = 3;
    if (!i4) {
      int16_t y2[16];
      for (int i = 0; i < 16; i++)
        y2[i] = 0;
      int n = onnxc_vp8_tokens(tb, v->coef + 264, tnz[8] + lnz[8], dq[2], dq[3], 0, y2);
      tnz[8] = lnz[8] = n > 0;
      onnxc_vp8_iwht(y2, coef);
      first = 1;
      type = 0;
    }
    for (int y = 0; y < 4; y++)
      for (int x = 0; x < 4; x++) {
        int16_t *c = coef + (4 * y + x) * 16;
        int n = onnxc_vp8_tokens(tb, v->coef + 264 * type, tnz[x] + lnz[y], dq[0], dq[1], first, c);
        tnz[x] = lnz[y] = n > first;
        nonzero |= n > 1 || c[0] != 0;
      }
    for (int ch = 0; ch < 2; ch++)
      for (int y = 0; y < 2; y++)
        for (int x = 0; x < 2; x++) {
          int16_t *c = coef + (16 + 4 * ch + 2 * y + x) * 16;
          int n = onnxc_vp8_tokens(tb, v->coef + 264 * 2, tnz[4 + 2 * ch + x] + lnz[4 + 2 * ch + y],
                                   dq[4], dq[5], 0, c);
          tnz[4 + 2 * ch + x] = lnz[4 + 2 * ch + y] = n > 0;
          nonzero |= n > 1 || c[0] != 0;
        }
  } else {
    for (int i = 0; i < 8; i++)
      tnz[i] = lnz[i] = 0;
    if (!i4)
      tnz[8] = lnz[8] = 0;
  }

  /* Prediction and reconstruction. */
  uint8_t *y0 = ws + ONNXC_VP8_Y0;
  if (i4) {
    for (int n = 0; n < 16; n++) {
      uint8_t *p = y0 + (n / 4) * 4 * ONNXC_VP8_YS + (n % 4) * 4;
      onnxc_vp8_pred_sub(p, ONNXC_VP8_YS, modes[n]);
      onnxc_vp8_idct_add(coef + 16 * n, p, ONNXC_VP8_YS);
    }
  } else {
    onnxc_vp8_pred_mb(y0, ONNXC_VP8_YS, 16, ymode, mby > 0, mbx > 0);
    for (int n = 0; n < 16; n++)
      onnxc_vp8_idct_add(coef + 16 * n, y0 + (n / 4) * 4 * ONNXC_VP8_YS + (n % 4) * 4, ONNXC_VP8_YS);
  }
  for (int ch = 0; ch < 2; ch++) {
    uint8_t *p = ws + (ch ? ONNXC_VP8_V0 : ONNXC_VP8_U0);
    onnxc_vp8_pred_mb(p, ONNXC_VP8_CS, 8, uvmode, mby > 0, mbx > 0);
    for (int n = 0; n < 4; n++)
      onnxc_vp8_idct_add(coef + (16 + 4 * ch + n) * 16, p + (n / 2) * 4 * ONNXC_VP8_CS + (n % 2) * 4,
                         ONNXC_VP8_CS);
  }
  return seg | i4 << 2 | (i4 || nonzero) << 3;
}

/* Loads the borders of macroblock (mbx, mby) into the workspace (section 12.2
 * and libwebp: 127 above the frame, 129 left of it, the above-right of the
 * last column repeats the last pixel above). */
static void onnxc_vp8_borders(uint8_t *ws, uint8_t *pl[3], const long st[3], int mbx, int mby,
                              int mbw) {
  for (int c = 0; c < 3; c++) {
    int sz = c ? 8 : 16, wsst = c ? ONNXC_VP8_CS : ONNXC_VP8_YS, ext = c ? 0 : 4;
    uint8_t *w = ws + (c == 0 ? ONNXC_VP8_Y0 : c == 1 ? ONNXC_VP8_U0 : ONNXC_VP8_V0);
    const uint8_t *p = pl[c] + (long)mby * sz * st[c] + (long)mbx * sz;
    for (int i = 0; i < sz + ext; i++) {
      int above = 127;
      if (mby > 0)
        above = i < sz ? p[i - st[c]] : mbx + 1 < mbw ? p[i - st[c]] : p[sz - 1 - st[c]];
      w[i - wsst] = (uint8_t)above;
    }
    w[-wsst - 1] = (uint8_t)(mby == 0 ? 127 : mbx == 0 ? 129 : p[-st[c] - 1]);
    for (int r = 0; r < sz; r++)
      w[r * wsst - 1] = (uint8_t)(mbx > 0 ? p[r * st[c] - 1] : 129);
    for (int r = 3; c == 0 && r < 12; r += 4)
      for (int i = 16; i < 20; i++)
        w[r * wsst + i] = w[i - wsst];
  }
}

/* Fancy upsampling of chroma plane q (cw x ch samples) at pixel (y, x). */
static int onnxc_vp8_chroma(const uint8_t *q, long s, long cw, long ch, long y, long x) {
  long cy = y >> 1, cx = x >> 1;
  long cy2 = onnxc_vp8_clampi((int)((y & 1) ? cy + 1 : cy - 1), 0, (int)ch - 1);
  long cx2 = onnxc_vp8_clampi((int)((x & 1) ? cx + 1 : cx - 1), 0, (int)cw - 1);
  return (9 * q[cy * s + cx] + 3 * q[cy * s + cx2] + 3 * q[cy2 * s + cx] + q[cy2 * s + cx2] + 8) >> 4;
}

/* libwebp's YUV -> RGB: 8.6 fixed point of the BT.601 studio-range formulas. */
static int onnxc_vp8_rgb8(int v) { return v < 0 ? 0 : v >= (256 << 6) ? 255 : v >> 6; }

static int onnxc_vp8_decode(const uint8_t *d, size_t n, const onnxc_img_out *o, uint8_t *scratch,
                            size_t scratch_bytes) {
  if (n < 10)
    return ONNXC_ERR_BAD_IMAGE;
  uint32_t tag = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16;
  if (tag & 1)
    return ONNXC_ERR_UNSUPPORTED; /* an inter frame cannot stand alone */
  if (((tag >> 1) & 7) > 3 || !((tag >> 4) & 1) || d[3] != 0x9d || d[4] != 0x01 || d[5] != 0x2a)
    return ONNXC_ERR_BAD_IMAGE;
  long w = (long)(onnxc_le16(d + 6) & 0x3fff), h = (long)(onnxc_le16(d + 8) & 0x3fff);
  size_t first = tag >> 5;
  if (w != o->w || h != o->h || w == 0 || h == 0 || first > n - 10)
    return ONNXC_ERR_BAD_IMAGE;
  onnxc_vp8 v;
  v.mbw = (int)((w + 15) >> 4);
  v.mbh = (int)((h + 15) >> 4);
  if (onnxc_vp8_scratch(v.mbw, v.mbh) > scratch_bytes)
    return ONNXC_ERR_BAD_IMAGE;
  onnxc_vp8_br_init(&v.br, d + 10, first);
  onnxc_vp8_header(&v);
  /* Token partitions: 3-byte sizes of all but the last, then the data. */
  const uint8_t *sizes = d + 10 + first, *part = sizes + 3 * (v.nparts - 1);
  size_t left = n - 10 - first;
  if (left < 3 * (size_t)(v.nparts - 1))
    return ONNXC_ERR_BAD_IMAGE;
  left -= 3 * (size_t)(v.nparts - 1);
  for (int i = 0; i < v.nparts; i++) {
    size_t ps = i + 1 < v.nparts ? (size_t)sizes[3 * i] | (size_t)sizes[3 * i + 1] << 8 |
                                       (size_t)sizes[3 * i + 2] << 16
                                 : left;
    if (ps > left)
      ps = left;
    onnxc_vp8_br_init(&v.part[i], part, ps);
    part += ps;
    left -= ps;
  }
  if (v.part[v.nparts - 1].p == v.part[v.nparts - 1].end)
    return ONNXC_ERR_BAD_IMAGE;

  long ys = (long)v.mbw * 16, cs = (long)v.mbw * 8;
  uint8_t *pl[3] = {scratch, scratch + ys * v.mbh * 16, scratch + ys * v.mbh * 16 + cs * v.mbh * 8};
  const long st[3] = {ys, cs, cs};
  uint8_t *info = pl[2] + cs * v.mbh * 8, *tops = info + (long)v.mbw * v.mbh;
  uint8_t ws[ONNXC_VP8_WS], left_ctx[13];
  for (long i = 0; i < 13L * v.mbw; i++)
    tops[i] = 0;
  for (int mby = 0; mby < v.mbh; mby++) {
    for (int i = 0; i < 13; i++)
      left_ctx[i] = 0;
    for (int mbx = 0; mbx < v.mbw; mbx++) {
      onnxc_vp8_borders(ws, pl, st, mbx, mby, v.mbw);
      info[(long)mby * v.mbw + mbx] = (uint8_t)onnxc_vp8_mb(
          &v, &v.part[mby & (v.nparts - 1)], ws, tops + 13L * mbx, left_ctx, mbx, mby);
      for (int c = 0; c < 3; c++) {
        int sz = c ? 8 : 16, wsst = c ? ONNXC_VP8_CS : ONNXC_VP8_YS;
        const uint8_t *src = ws + (c == 0 ? ONNXC_VP8_Y0 : c == 1 ? ONNXC_VP8_U0 : ONNXC_VP8_V0);
        uint8_t *p = pl[c] + (long)mby * sz * st[c] + (long)mbx * sz;
        for (int r = 0; r < sz; r++)
          for (int i = 0; i < sz; i++)
            p[r * st[c] + i] = src[r * wsst + i];
      }
    }
  }
  if (v.level > 0)
    for (int mby = 0; mby < v.mbh; mby++)
      for (int mbx = 0; mbx < v.mbw; mbx++)
        onnxc_vp8_filter_mb(&v, pl, st, mbx, mby, info[(long)mby * v.mbw + mbx]);

  long cw = (w + 1) / 2, chh = (h + 1) / 2;
  for (long y = 0; y < h; y++)
    for (long x = 0; x < w; x++) {
      int yy = (pl[0][y * ys + x] * 19077) >> 8;
      int u = onnxc_vp8_chroma(pl[1], cs, cw, chh, y, x), vv = onnxc_vp8_chroma(pl[2], cs, cw, chh, y, x);
      onnxc_img_put(o, y, x, onnxc_vp8_rgb8(yy + ((vv * 26149) >> 8) - 14234),
                    onnxc_vp8_rgb8(yy - ((u * 6419) >> 8) - ((vv * 13320) >> 8) + 8708),
                    onnxc_vp8_rgb8(yy + ((u * 33050) >> 8) - 17685));
    }
  return ONNXC_OK;
}

/* ---- WebP lossless (VP8L) ------------------------------------------------------ */
/* LSB-first bit stream of canonical prefix codes (deflate's bit order), LZ77
 * back references over the ARGB pixels, a colour cache, and four inverse
 * transforms (predictor, cross-colour, subtract-green, colour indexing) undone
 * in reverse order of appearance. Memory comes from a bump allocator over the
 * scratch; a stream whose prefix codes do not fit returns ONNXC_ERR_UNSUPPORTED. */

/* Distance codes 1..120 as (dy << 4) | (8 - dx): the spec's table of short 2-D offsets. */
static const uint8_t onnxc_vp8l_plane[120] = {
  0x18, 0x07, 0x17, 0x19, 0x28, 0x06, 0x27, 0x29, 0x16, 0x1a, 0x26, 0x2a, 0x38, 0x05, 0x37,
  0x39, 0x15, 0x1b, 0x36, 0x3a, 0x25, 0x2b, 0x48, 0x04, 0x47, 0x49, 0x14, 0x1c, 0x35, 0x3b,
  0x46, 0x4a, 0x24, 0x2c, 0x58, 0x45, 0x4b, 0x34, 0x3c, 0x03, 0x57, 0x59, 0x13, 0x1d, 0x56,
  0x5a, 0x23, 0x2d, 0x44, 0x4c, 0x55, 0x5b, 0x33, 0x3d, 0x68, 0x02, 0x67, 0x69, 0x12, 0x1e,
  0x66, 0x6a, 0x22, 0x2e, 0x54, 0x5c, 0x43, 0x4d, 0x65, 0x6b, 0x32, 0x3e, 0x78, 0x01, 0x77,
  0x79, 0x53, 0x5d, 0x11, 0x1f, 0x64, 0x6c, 0x42, 0x4e, 0x76, 0x7a, 0x21, 0x2f, 0x75, 0x7b,
  0x31, 0x3f, 0x63, 0x6d, 0x52, 0x5e, 0x00, 0x74, 0x7c, 0x41, 0x4f, 0x10, 0x20, 0x62, 0x6e,
  0x30, 0x73, 0x7d, 0x51, 0x5f, 0x40, 0x72, 0x7e, 0x61, 0x6f, 0x50, 0x71, 0x7f, 0x60, 0x70};

typedef struct onnxc_vp8l {
  const uint8_t *d;
  size_t n, bit;
  int eos;
  uint8_t *mem, *end; /* free scratch */
} onnxc_vp8l;

static uint32_t onnxc_vp8l_bits(onnxc_vp8l *l, int k) {
  uint32_t v = 0;
  for (int i = 0; i < k; i++, l->bit++) {
    size_t byte = l->bit >> 3;
    if (byte >= l->n)
      l->eos = 1;
    else
      v |= (uint32_t)((l->d[byte] >> (l->bit & 7)) & 1) << i;
  }
  return v;
}

static void *onnxc_vp8l_alloc(onnxc_vp8l *l, size_t bytes) {
  size_t pad = (size_t)((8 - (uintptr_t)l->mem % 8) % 8), room = (size_t)(l->end - l->mem);
  if (pad > room || bytes > room - pad)
    return NULL;
  void *p = l->mem + pad;
  l->mem += pad + bytes;
  return p;
}

/* Canonical code from lengths into c: c[0] the number of symbols, c[1..15] the
 * count of each length, then the symbols by (length, value). A single symbol
 * takes no bits. Returns 0 for an empty, over-subscribed or incomplete code. */
static int onnxc_vp8l_build(const uint8_t *lens, int n, uint16_t *c) {
  int nnz = 0, left = 1, offs[16];
  for (int i = 0; i < 16; i++)
    c[i] = 0;
  for (int s = 0; s < n; s++)
    if (lens[s]) {
      c[lens[s]]++;
      nnz++;
    }
  c[0] = (uint16_t)nnz;
  if (nnz <= 1) {
    for (int s = 0; s < n; s++)
      if (lens[s])
        c[16] = (uint16_t)s;
    return nnz;
  }
  for (int len = 1; len < 16; len++) {
    left = 2 * left - c[len];
    if (left < 0)
      return 0;
  }
  if (left != 0)
    return 0;
  offs[1] = 0;
  for (int len = 1; len < 15; len++)
    offs[len + 1] = offs[len] + c[len];
  for (int s = 0; s < n; s++)
    if (lens[s])
      c[16 + offs[lens[s]]++] = (uint16_t)s;
  return 1;
}

static int onnxc_vp8l_sym(onnxc_vp8l *l, const uint16_t *c) {
  if (c[0] == 1)
    return c[16];
  int code = 0, first = 0, index = 0;
  for (int len = 1; len < 16; len++) {
    code |= (int)onnxc_vp8l_bits(l, 1);
    if (code - first < c[len])
      return c[16 + index + code - first];
    index += c[len];
    first = (first + c[len]) << 1;
    code <<= 1;
  }
  return -1;
}

/* Reads one prefix code of the given alphabet; NULL with *rc set on failure. */
static const uint16_t *onnxc_vp8l_code(onnxc_vp8l *l, int alphabet, int *rc) {
  static const uint8_t order[19] = {17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  uint8_t lens[256 + 24 + 2048];
  uint16_t clc[16 + 19];
  *rc = ONNXC_ERR_BAD_IMAGE;
  for (int i = 0; i < alphabet; i++)
    lens[i] = 0;
  if (onnxc_vp8l_bits(l, 1)) { /* simple code: one or two symbols */
    int two = (int)onnxc_vp8l_bits(l, 1);
    int s0 = (int)onnxc_vp8l_bits(l, onnxc_vp8l_bits(l, 1) ? 8 : 1);
    if (s0 >= alphabet)
      return NULL;
    lens[s0] = 1;
    if (two) {
      int s1 = (int)onnxc_vp8l_bits(l, 8);
      if (s1 >= alphabet)
        return NULL;
      lens[s1] = 1;
    }
  } else {
    uint8_t cl[19] = {0};
    int ncl = 4 + (int)onnxc_vp8l_bits(l, 4), max_sym = alphabet, prev = 8;
    for (int i = 0; i < ncl; i++)
      cl[order[i]] = (uint8_t)onnxc_vp8l_bits(l, 3);
    if (!onnxc_vp8l_build(cl, 19, clc))
      return NULL;
    if (onnxc_vp8l_bits(l, 1)) {
      max_sym = 2 + (int)onnxc_vp8l_bits(l, 2 + 2 * (int)onnxc_vp8l_bits(l, 3));
      if (max_sym > alphabet)
        return NULL;
    }
    for (int s = 0; s < alphabet && max_sym-- > 0 && !l->eos;) {
      int v = onnxc_vp8l_sym(l, clc);
      if (v < 0)
        return NULL;
      if (v < 16) {
        lens[s++] = (uint8_t)v;
        if (v)
          prev = v;
        continue;
      }
      int rep = v == 16 ? 3 + (int)onnxc_vp8l_bits(l, 2)
                        : v == 17 ? 3 + (int)onnxc_vp8l_bits(l, 3) : 11 + (int)onnxc_vp8l_bits(l, 7);
      if (rep > alphabet - s)
        return NULL;
      while (rep-- > 0)
        lens[s++] = (uint8_t)(v == 16 ? prev : 0);
    }
  }
  int nnz = 0;
  for (int i = 0; i < alphabet; i++)
    nnz += lens[i] != 0;
  uint16_t *c = (uint16_t *)onnxc_vp8l_alloc(l, 2 * (size_t)(16 + (nnz ? nnz : 1)));
  if (!c) {
    *rc = ONNXC_ERR_UNSUPPORTED;
    return NULL;
  }
  return !l->eos && onnxc_vp8l_build(lens, alphabet, c) ? c : NULL;
}

/* Length or distance from its prefix symbol and extra bits. */
static long onnxc_vp8l_prefix(onnxc_vp8l *l, int sym) {
  if (sym < 4)
    return sym + 1;
  int extra = (sym - 2) >> 1;
  return (long)((2 + (sym & 1)) << extra) + (long)onnxc_vp8l_bits(l, extra) + 1;
}

/* Prefix codes and pixels of a w x h image; ent (ew wide, tiles of 1 << ebits)
 * selects the code group of each pixel in the main image. */
static int onnxc_vp8l_pixels(onnxc_vp8l *l, uint32_t *px, long w, long h, int cache_bits,
                             const uint32_t *ent, int ebits, long ew, long eh) {
  int ngroups = 1, rc;
  for (long i = 0; ent && i < ew * eh; i++)
    if ((int)((ent[i] >> 8) & 0xffff) >= ngroups)
      ngroups = (int)((ent[i] >> 8) & 0xffff) + 1;
  int ncache = cache_bits ? 1 << cache_bits : 0;
  uint32_t *cache = (uint32_t *)onnxc_vp8l_alloc(l, 4 * (size_t)(ncache ? ncache : 1));
  const uint16_t **codes = (const uint16_t **)onnxc_vp8l_alloc(l, 5 * sizeof(uint16_t *) * (size_t)ngroups);
  if (!cache || !codes)
    return ONNXC_ERR_UNSUPPORTED;
  for (int i = 0; i < ncache; i++)
    cache[i] = 0;
  for (int i = 0; i < 5 * ngroups; i++) {
    int k = i % 5;
    codes[i] = onnxc_vp8l_code(l, k == 0 ? 280 + ncache : k == 4 ? 40 : 256, &rc);
    if (!codes[i])
      return rc;
  }
  long total = w * h, pos = 0;
  while (pos < total) {
    long y = pos / w, x = pos - y * w;
    const uint16_t **g = codes + (ent ? 5 * (long)((ent[(y >> ebits) * ew + (x >> ebits)] >> 8) & 0xffff) : 0);
    int s = onnxc_vp8l_sym(l, g[0]);
    long len = 1;
    if (s < 0 || l->eos)
      return ONNXC_ERR_BAD_IMAGE;
    if (s < 256) {
      uint32_t r = (uint32_t)onnxc_vp8l_sym(l, g[1]), b = (uint32_t)onnxc_vp8l_sym(l, g[2]);
      uint32_t a = (uint32_t)onnxc_vp8l_sym(l, g[3]);
      px[pos] = (a & 0xff) << 24 | (r & 0xff) << 16 | (uint32_t)s << 8 | (b & 0xff);
    } else if (s < 280) {
      len = onnxc_vp8l_prefix(l, s - 256);
      int ds = onnxc_vp8l_sym(l, g[4]);
      if (ds < 0)
        return ONNXC_ERR_BAD_IMAGE;
      long code = onnxc_vp8l_prefix(l, ds), dist;
      if (code > 120) {
        dist = code - 120;
      } else {
        int p = onnxc_vp8l_plane[code - 1];
        dist = (p >> 4) * w + 8 - (p & 15);
        if (dist < 1)
          dist = 1;
      }
      if (dist > pos || len > total - pos)
        return ONNXC_ERR_BAD_IMAGE;
      for (long i = 0; i < len; i++)
        px[pos + i] = px[pos + i - dist];
    } else {
      px[pos] = cache[s - 280];
    }
    for (long i = 0; i < len && ncache; i++, pos++)
      cache[(uint32_t)(px[pos] * 0x1e35a7bdu) >> (32 - cache_bits)] = px[pos];
    if (!ncache)
      pos += len;
  }
  return l->eos ? ONNXC_ERR_BAD_IMAGE : ONNXC_OK;
}

/* A transform's or the entropy image's sub-image; its codes are freed after. */
static int onnxc_vp8l_sub(onnxc_vp8l *l, uint32_t *px, long w, long h) {
  uint8_t *mark = l->mem;
  int cb = 0;
  if (onnxc_vp8l_bits(l, 1)) {
    cb = (int)onnxc_vp8l_bits(l, 4);
    if (cb < 1 || cb > 11)
      return ONNXC_ERR_BAD_IMAGE;
  }
  int rc = onnxc_vp8l_pixels(l, px, w, h, cb, NULL, 0, 0, 0);
  l->mem = mark;
  return rc;
}

static uint32_t onnxc_argb_add(uint32_t a, uint32_t b) {
  return (((a & 0xff00ff00u) + (b & 0xff00ff00u)) & 0xff00ff00u) |
         (((a & 0x00ff00ffu) + (b & 0x00ff00ffu)) & 0x00ff00ffu);
}
static uint32_t onnxc_argb_avg(uint32_t a, uint32_t b) { return (((a ^ b) & 0xfefefefeu) >> 1) + (a & b); }

/* Per channel: clamp(a + b - c), or with half set clamp(a + (a - c) / 2). */
static uint32_t onnxc_argb_clamp(uint32_t a, uint32_t b, uint32_t c, int half) {
  uint32_t out = 0;
  for (int sh = 0; sh < 32; sh += 8) {
    int x = (int)((a >> sh) & 0xff), y = (int)((b >> sh) & 0xff), z = (int)((c >> sh) & 0xff);
    int v = half ? x + (x - z) / 2 : x + y - z;
    out |= (uint32_t)(v < 0 ? 0 : v > 255 ? 255 : v) << sh;
  }
  return out;
}

static uint32_t onnxc_vp8l_predict(const uint32_t *p, long w, int mode) {
  uint32_t L = p[-1], T = p[-w], TL = p[-w - 1], TR = p[-w + 1];
  switch (mode) {
  case 1: return L;
  case 2: return T;
  case 3: return TR;
  case 4: return TL;
  case 5: return onnxc_argb_avg(onnxc_argb_avg(L, TR), T);
  case 6: return onnxc_argb_avg(L, TL);
  case 7: return onnxc_argb_avg(L, T);
  case 8: return onnxc_argb_avg(TL, T);
  case 9: return onnxc_argb_avg(T, TR);
  case 10: return onnxc_argb_avg(onnxc_argb_avg(L, TL), onnxc_argb_avg(T, TR));
  case 11: {
    int d = 0; /* sum |L - TL| - |T - TL|: pick T when L is no farther */
    for (int sh = 0; sh < 32; sh += 8) {
      int l8 = (int)((L >> sh) & 0xff), t8 = (int)((T >> sh) & 0xff), c8 = (int)((TL >> sh) & 0xff);
      d += (l8 > c8 ? l8 - c8 : c8 - l8) - (t8 > c8 ? t8 - c8 : c8 - t8);
    }
    return d <= 0 ? T : L;
  }
  case 12: return onnxc_argb_clamp(L, T, TL, 0);
  case 13: return onnxc_argb_clamp(onnxc_argb_avg(L, T), 0, TL, 1);
  default: return 0xff000000u;
  }
}

static int onnxc_s8(uint32_t v) { return (int)((v & 0xff) ^ 0x80) - 0x80; }

static int onnxc_vp8l_decode(const uint8_t *d, size_t n, const onnxc_img_out *o, uint8_t *scratch,
                             size_t scratch_bytes) {
  onnxc_vp8l l = {d, n, 8, 0, scratch, scratch + scratch_bytes};
  if (n < 5 || d[0] != 0x2f)
    return ONNXC_ERR_BAD_IMAGE;
  long w = (long)onnxc_vp8l_bits(&l, 14) + 1, h = (long)onnxc_vp8l_bits(&l, 14) + 1;
  onnxc_vp8l_bits(&l, 1); /* alpha hint */
  if (onnxc_vp8l_bits(&l, 3) != 0 || w != o->w || h != o->h)
    return ONNXC_ERR_BAD_IMAGE;
  uint32_t *argb = (uint32_t *)onnxc_vp8l_alloc(&l, 4 * (size_t)w * (size_t)h), *tdata[4];
  int ttype[4], tbits[4], nt = 0, seen = 0, rc;
  long twidth[4], xs = w;
  if (!argb)
    return ONNXC_ERR_UNSUPPORTED;
  while (onnxc_vp8l_bits(&l, 1)) {
    int t = (int)onnxc_vp8l_bits(&l, 2), b = 0;
    uint32_t *data = NULL;
    if (seen & (1 << t))
      return ONNXC_ERR_BAD_IMAGE;
    seen |= 1 << t;
    if (t == 0 || t == 1) {
      b = (int)onnxc_vp8l_bits(&l, 3) + 2;
      long bw = (xs + (1L << b) - 1) >> b, bh = (h + (1L << b) - 1) >> b;
      data = (uint32_t *)onnxc_vp8l_alloc(&l, 4 * (size_t)(bw * bh));
      if (!data)
        return ONNXC_ERR_UNSUPPORTED;
      if ((rc = onnxc_vp8l_sub(&l, data, bw, bh)) != ONNXC_OK)
        return rc;
    } else if (t == 3) {
      int ncol = (int)onnxc_vp8l_bits(&l, 8) + 1;
      b = ncol > 16 ? 0 : ncol > 4 ? 1 : ncol > 2 ? 2 : 3;
      data = (uint32_t *)onnxc_vp8l_alloc(&l, 4 * 256);
      if (!data)
        return ONNXC_ERR_UNSUPPORTED;
      for (int i = 0; i < 256; i++)
        data[i] = 0;
      if ((rc = onnxc_vp8l_sub(&l, data, ncol, 1)) != ONNXC_OK)
        return rc;
      for (int i = 1; i < ncol; i++) /* the palette is delta coded */
        data[i] = onnxc_argb_add(data[i], data[i - 1]);
    }
    ttype[nt] = t;
    tbits[nt] = b;
    tdata[nt] = data;
    twidth[nt++] = xs;
    if (t == 3)
      xs = (xs + (1L << b) - 1) >> b;
  }
  /* Main image: colour cache, optional entropy image, then pixels. */
  uint32_t *img = xs == w ? argb : (uint32_t *)onnxc_vp8l_alloc(&l, 4 * (size_t)(xs * h)), *ent = NULL;
  int cb = 0, eb = 0;
  long ew = 0, eh = 0;
  if (!img)
    return ONNXC_ERR_UNSUPPORTED;
  if (onnxc_vp8l_bits(&l, 1)) {
    cb = (int)onnxc_vp8l_bits(&l, 4);
    if (cb < 1 || cb > 11)
      return ONNXC_ERR_BAD_IMAGE;
  }
  if (onnxc_vp8l_bits(&l, 1)) {
    eb = (int)onnxc_vp8l_bits(&l, 3) + 2;
    ew = (xs + (1L << eb) - 1) >> eb;
    eh = (h + (1L << eb) - 1) >> eb;
    ent = (uint32_t *)onnxc_vp8l_alloc(&l, 4 * (size_t)(ew * eh));
    if (!ent)
      return ONNXC_ERR_UNSUPPORTED;
    if ((rc = onnxc_vp8l_sub(&l, ent, ew, eh)) != ONNXC_OK)
      return rc;
  }
  if ((rc = onnxc_vp8l_pixels(&l, img, xs, h, cb, ent, eb, ew, eh)) != ONNXC_OK)
    return rc;
  /* Inverse transforms, last read first. */
  for (int t = nt - 1; t >= 0; t--) {
    long tw = twidth[t];
    int b = tbits[t];
    const uint32_t *data = tdata[t];
    long bw = (tw + (1L << b) - 1) >> b;
    if (ttype[t] == 3) {
      long pw = (tw + (1L << b) - 1) >> b;
      int bpp = 8 >> b;
      for (long y = 0; y < h; y++)
        for (long x = 0; x < tw; x++) {
          uint32_t v = img[y * pw + (x >> b)] >> 8;
          argb[y * tw + x] = data[(v >> ((x & ((1L << b) - 1)) * bpp)) & ((1u << bpp) - 1)];
        }
      img = argb;
      continue;
    }
    for (long y = 0; y < h; y++)
      for (long x = 0; x < tw; x++) {
        uint32_t *p = img + y * tw + x, m = data ? data[(y >> b) * bw + (x >> b)] : 0;
        if (ttype[t] == 0) {
          uint32_t pred = y == 0   ? (x == 0 ? 0xff000000u : p[-1])
                          : x == 0 ? p[-tw]
                                   : onnxc_vp8l_predict(p, tw, (int)((m >> 8) & 15));
          *p = onnxc_argb_add(*p, pred);
        } else if (ttype[t] == 1) {
          int g = onnxc_s8(*p >> 8), r = (int)((*p >> 16) & 0xff), bl = (int)(*p & 0xff);
          r = (r + ((onnxc_s8(m) * g) >> 5)) & 0xff;
          bl = (bl + ((onnxc_s8(m >> 8) * g) >> 5) + ((onnxc_s8(m >> 16) * onnxc_s8((uint32_t)r)) >> 5)) & 0xff;
          *p = (*p & 0xff00ff00u) | (uint32_t)r << 16 | (uint32_t)bl;
        } else {
          uint32_t g = (*p >> 8) & 0xff;
          *p = (*p & 0xff00ff00u) | (((*p >> 16) + g) & 0xff) << 16 | ((*p + g) & 0xff);
        }
      }
  }
  for (long y = 0; y < h; y++)
    for (long x = 0; x < w; x++) {
      uint32_t v = argb[y * w + x];
      onnxc_img_put(o, y, x, (int)((v >> 16) & 0xff), (int)((v >> 8) & 0xff), (int)(v & 0xff));
    }
  return ONNXC_OK;
}

/* RIFF container: a simple file holds one VP8 or VP8L chunk; an extended one
 * (VP8X) may add ICC, EXIF, XMP and ALPH chunks, ignored here (alpha dropped). */
static int onnxc_webp(const uint8_t *d, size_t n, const onnxc_img_out *o, uint8_t *scratch,
                      size_t scratch_bytes) {
  size_t riff = onnxc_le32(d + 4);
  if (riff < 4 || riff > n - 8)
    return ONNXC_ERR_BAD_IMAGE;
  n = riff + 8;
  for (size_t pos = 12; n - pos >= 8;) {
    size_t sz = onnxc_le32(d + pos + 4);
    const uint8_t *c = d + pos + 8;
    if (sz > n - pos - 8)
      return ONNXC_ERR_BAD_IMAGE;
    if (onnxc_img_eq(d + pos, "VP8 ", 4))
      return onnxc_vp8_decode(c, sz, o, scratch, scratch_bytes);
    if (onnxc_img_eq(d + pos, "VP8L", 4))
      return onnxc_vp8l_decode(c, sz, o, scratch, scratch_bytes);
    if (onnxc_img_eq(d + pos, "VP8X", 4) && sz >= 10 && (c[0] & 0x02))
      return ONNXC_ERR_UNSUPPORTED; /* animation */
    if (sz + (sz & 1) > n - pos - 8)
      return ONNXC_ERR_BAD_IMAGE;
    pos += 8 + sz + (sz & 1);
  }
  return ONNXC_ERR_BAD_IMAGE;
}

#endif
