/* The two text encodings of a receipt: base64 for the manifest's digests, base58btc for the
 * proofValue (verify/multikey.py's b58encode writes the same characters). */
#include "native.h"

#include <stdint.h>
#include <string.h>

void base64_32(const unsigned char *digest, char *out) {
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int i = 0;
    for (; i + 3 <= 32; i += 3) {
        unsigned int triple = digest[i] << 16 | digest[i + 1] << 8 | digest[i + 2];
        *out++ = alphabet[triple >> 18 & 63];
        *out++ = alphabet[triple >> 12 & 63];
        *out++ = alphabet[triple >> 6 & 63];
        *out++ = alphabet[triple & 63];
    }
    unsigned int pair = digest[i] << 16 | digest[i + 1] << 8; /* 32 = 3 * 10 + 2 */
    *out++ = alphabet[pair >> 18 & 63];
    *out++ = alphabet[pair >> 12 & 63];
    *out++ = alphabet[pair >> 6 & 63];
    *out = '=';
}

/* The number is divided by 58**5 (below 2**32) a limb at a time: each pass leaves five digits. */
Py_ssize_t base58(const unsigned char *bytes, Py_ssize_t size, char *out) {
    static const char alphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    enum { LIMBS = 16, CHUNK = 656356768 }; /* 64 bytes; 58**5 */
    uint32_t limbs[LIMBS] = {0};            /* most significant first */
    char digits[100];                       /* least significant first: 64 bytes need 88 */
    Py_ssize_t zeros = 0, count = 0, written = 0, first = 0;
    while (zeros < size && bytes[zeros] == 0) {
        zeros++;
    }
    for (Py_ssize_t i = 0; i < size; i++) { /* right-aligned in the limbs */
        Py_ssize_t bit = (size - 1 - i) * 8;
        limbs[LIMBS - 1 - bit / 32] |= (uint32_t)bytes[i] << (bit % 32);
    }
    while (first < LIMBS) {
        uint64_t rest = 0;
        for (Py_ssize_t k = first; k < LIMBS; k++) {
            uint64_t part = rest << 32 | limbs[k];
            limbs[k] = (uint32_t)(part / CHUNK);
            rest = part % CHUNK;
        }
        for (int d = 0; d < 5; d++, rest /= 58) {
            digits[count++] = alphabet[rest % 58];
        }
        while (first < LIMBS && limbs[first] == 0) {
            first++;
        }
    }
    while (count > 0 && digits[count - 1] == '1') {
        count--; /* the last pass's leading zero digits */
    }
    for (Py_ssize_t i = 0; i < zeros; i++) {
        out[written++] = '1'; /* a leading zero byte is a leading '1' */
    }
    while (count > 0) {
        out[written++] = digits[--count];
    }
    return written;
}
