#pragma once
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
