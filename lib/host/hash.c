/*
 * lib/host/hash.c - SHA-256 through OpenSSL's EVP interface (see hash.h).
 */
#include "lib/host/hash.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>

int hash_sha256_hex(const void *data, size_t n, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	if (!EVP_Digest(data, n, md, &len, EVP_sha256(), NULL) || len != 32)
		return -EIO;
	for (unsigned i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}
