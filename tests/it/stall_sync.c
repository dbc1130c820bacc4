/* A disk whose flushes stall, for the storage tests: loaded into the server with LD_PRELOAD,
 * it holds every fsync, fdatasync and sync_file_range while the file that
 * CHRONICLE_TEST_STALL names exists, then lets the call through to the C library. Writes still
 * reach the page cache; what a stalled disk withholds is durability, which the server waits
 * for before it acknowledges a write. The first call held creates that name with `.held`
 * after it, so that a test knows a flush is under way. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_sync_file_range)(int, off64_t, off64_t, unsigned int);
static const char *stall_path;
static char held_path[4096];

__attribute__((constructor)) static void find_the_real_calls(void) {
    real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    real_sync_file_range =
        (int (*)(int, off64_t, off64_t, unsigned int))dlsym(RTLD_NEXT, "sync_file_range");
    stall_path = getenv("CHRONICLE_TEST_STALL");
    if (stall_path != NULL &&
        snprintf(held_path, sizeof held_path, "%s.held", stall_path) >= (int)sizeof held_path) {
        stall_path = NULL;
    }
}

static void hold(void) {
    const struct timespec pause = {0, 5 * 1000 * 1000};
    if (stall_path == NULL || access(stall_path, F_OK) != 0) {
        return;
    }
    int held = open(held_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (held >= 0) {
        close(held);
    }
    while (access(stall_path, F_OK) == 0) {
        nanosleep(&pause, NULL);
    }
}

int fsync(int fd) {
    hold();
    return real_fsync(fd);
}

int fdatasync(int fd) {
    hold();
    return real_fdatasync(fd);
}

int sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags) {
    hold();
    return real_sync_file_range(fd, offset, nbytes, flags);
}
