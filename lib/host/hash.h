/*
 * lib/host/hash.h - SHA-256 (OpenSSL) as lowercase hex, for token hashes and
 * template cache keys.
 */
#ifndef SPACE_LIB_HOST_HASH_H
#define SPACE_LIB_HOST_HASH_H

#include <stddef.h>

/* Writes the hex SHA-256 of data[0..n) and a NUL into out. Returns 0 or -EIO. */
int hash_sha256_hex(const void *data, size_t n, char out[65]);

#endif
