#pragma once
#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np(actions, from): the child closes every descriptor from `from` up,
/// whoever opened it (libraries open descriptors without close-on-exec, e.g. SwiftNIO's listening socket and
/// epoll descriptor). Swift's Glibc module does not import it (a GNU extension). Returns 0, or an error number:
/// ENOSYS where glibc is older than 2.34 and lacks it.
int hs_spawn_close_from(posix_spawn_file_actions_t *actions, int from);

/// pipe2(fds, O_CLOEXEC), which Swift's Glibc module does not import: a pipe no child inherits.
int hs_pipe_cloexec(int fds[2]);

/// Sets `attributes` so that the child starts with no signal blocked and every signal at its default action: a
/// thread of Swift's or Dispatch's blocks most signals, and the speaker ignores SIGPIPE, and both would otherwise
/// pass to the child through exec (a hook that cannot be stopped with SIGTERM, a pipeline that never sees SIGPIPE).
/// Returns 0, or an error number.
int hs_spawn_clean_signals(posix_spawnattr_t *attributes);
