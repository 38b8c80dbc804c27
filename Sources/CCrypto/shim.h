#pragma once
#include <openssl/hmac.h>
