#pragma once
// Typed wrappers for libcurl's variadic setters: Swift cannot call C variadic functions.
#include <curl/curl.h>

typedef size_t (*hs_curl_data_callback)(char *buffer, size_t size, size_t nitems, void *userdata);

CURLcode hs_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode hs_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode hs_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode hs_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode hs_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
/// option is CURLOPT_WRITEFUNCTION, CURLOPT_READFUNCTION or CURLOPT_HEADERFUNCTION.
CURLcode hs_curl_setopt_callback(CURL *handle, CURLoption option, hs_curl_data_callback callback);
typedef int (*hs_curl_seek_callback)(void *userdata, curl_off_t offset, int origin);
CURLcode hs_curl_setopt_seek(CURL *handle, hs_curl_seek_callback callback);
CURLcode hs_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode hs_curl_getinfo_pointer(CURL *handle, CURLINFO info, void **value);
CURLcode hs_curl_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value);
CURLMcode hs_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

/// CURL_READFUNC_PAUSE / CURL_READFUNC_ABORT / CURL_WRITEFUNC_PAUSE as plain values.
size_t hs_curl_readfunc_pause(void);
size_t hs_curl_readfunc_abort(void);
