// Shim over libcurl for Swift. `curl_easy_setopt` and `curl_easy_getinfo` are variadic, so
// each argument type Sluice passes gets a fixed-argument wrapper.
#ifndef SLUICE_CCURL_SHIM_H
#define SLUICE_CCURL_SHIM_H

#include <curl/curl.h>

static inline CURLcode sluice_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode sluice_curl_setopt_string(CURL *handle, CURLoption option,
                                                 const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode sluice_curl_setopt_pointer(CURL *handle, CURLoption option,
                                                  void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode sluice_curl_setopt_slist(CURL *handle, CURLoption option,
                                                struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode sluice_curl_setopt_write_callback(CURL *handle, CURLoption option,
                                                         curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

static inline CURLcode sluice_curl_setopt_xferinfo_callback(CURL *handle,
                                                            curl_xferinfo_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

static inline CURLcode sluice_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

#endif
