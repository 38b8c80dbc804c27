#define _GNU_SOURCE
#include "hs_spawn.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <features.h>
#include <stdlib.h>
#include <unistd.h>

int hs_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
#if __GLIBC_PREREQ(2, 34)
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
#else
    // Older glibc (not a release this project supports, Debian 12 has 2.36): mark every descriptor open now
    // close-on-exec instead, which no spawn after this one can undo. The directory's own descriptor is skipped.
    (void)actions;
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) return errno;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        int fd = atoi(entry->d_name);
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9' || fd < from || fd == dirfd(dir)) continue;
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
    closedir(dir);
    return 0;
#endif
}

int hs_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int hs_spawn_clean_signals(posix_spawnattr_t *attributes) {
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int status = posix_spawnattr_setsigmask(attributes, &none);
    if (status == 0) status = posix_spawnattr_setsigdefault(attributes, &all);
    if (status == 0) status = posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    return status;
}
