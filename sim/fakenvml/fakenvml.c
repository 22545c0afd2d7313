/*
 * fakenvml.c - a stand-in for libnvidia-ml.so.1 on hosts without a GPU.
 *
 * The real nvidia-ml-py loads it (LD_LIBRARY_PATH) and sees the GPUs of a fake
 * host root made by `simctl gpu init ROOT`; the root comes from $FAKE_NVML_ROOT.
 *
 *   ROOT/nvml/config        key=value: count, name, memory_mib, reserved_mib,
 *                           driver_version, release_delay_ms, uuid<N>
 *   ROOT/nvml/alloc/.lock   readers (and registering holders) flock it LOCK_EX
 *   ROOT/nvml/alloc/a-G-P-T one allocation on GPU G by pid P; its holder keeps
 *                           an flock on it for as long as the process lives
 *   ROOT/nvml/alloc/r-G-P-T-MS  an allocation whose holder is gone, first seen
 *                           so at CLOCK_MONOTONIC MS; still counted until
 *                           release_delay_ms has passed, then removed
 *   ROOT/nvml/faults/       hang, hang<N>, lost<N>, no_v2, no_energy (see simlib/fakegpu.py)
 *   ROOT/nvml/health/gpu<N> the health a GPU reports (ECC, retired pages, row remaps,
 *                           recovery action, InfoROM, fabric, PCIe, clocks events,
 *                           temperature): the model is at "health" below
 *   ROOT/nvml/power/gpu<N>  the GPU's load, power and energy counter, written by
 *                           simlib/fakegpu.py: the model is at "power" below
 *
 * Memory semantics as measured on a real driver: v1 used = reserved + allocations,
 * v2 used = allocations only, v2 free = total - reserved - used.
 * Like the real library (seen on an H200, driver 580), nvmlInit opens ROOT/dev's
 * nvidiactl, nvidia-uvm, nvidia-caps/nvidia-cap1,2 and every nvidiaN (fds, never
 * mapped) and the last nvmlShutdown closes them: every NVML user is a holder of
 * /dev/nvidiaN by fd, though it holds no memory.
 * Build: gcc -shared -fPIC -O2 -Wall -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 fakenvml.c
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9, NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13, NVML_ERROR_CORRUPTED_INFOROM = 14, NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_OPERATING_SYSTEM = 17, NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

#define MAX_GPUS 64
#define MAX_PROCS 256
#define MIB (1024ULL * 1024ULL)
#define NOT_AVAILABLE_U32 0xFFFFFFFFu
#define MEMORY_V2_VERSION 0x02000028u /* sizeof(v2 struct) | 2 << 24 */

/* Struct layouts as nvidia-ml-py 13 declares them. */
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; } nvmlProcessInfo_v1_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t; /* _v2 and _v3 share it */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

/* A handle is a pointer into this table, as the real library hands out. */
typedef struct fake_dev { unsigned int index; char uuid[96]; } fake_dev;
typedef fake_dev *nvmlDevice_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_refs;
static char g_root[4096];
static unsigned int g_count;
static char g_name[96] = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
static unsigned long long g_memory_mib = 97887, g_reserved_mib = 615;
static char g_driver[80] = "580.95.05";
static long long g_delay_ms = 120;
/* The power and clocks model (config keys of the same names; see "power" below). */
static long long g_energy_period_ms = 100, g_power_max_w = 700;
static long long g_sm_clock_max = 1980, g_sm_clock_default = 1980, g_sm_clock_idle = 885;
static long long g_mem_clock = 3201;
static fake_dev g_devs[MAX_GPUS];
static int g_devfds[MAX_GPUS + 4];
static int g_ndevfds;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *state_root(void)
{
    return g_root[0] ? g_root : getenv("FAKE_NVML_ROOT");
}

static int fault_exists(const char *name)
{
    const char *root = state_root();
    char path[4352];
    if (!root || !root[0])
        return 0;
    snprintf(path, sizeof path, "%s/nvml/faults/%s", root, name);
    return access(path, F_OK) == 0;
}

/* Fault `hang`: block like a sick GPU, but in an interruptible sleep so that a
 * caller's timeout (a signal, a kill) still ends it. */
static void hang_while_faulted(void)
{
    struct timespec step = {0, 20 * 1000 * 1000};
    while (fault_exists("hang"))
        nanosleep(&step, NULL);
}

/* Fault `hang<N>`: calls on GPU N block (interruptibly) while it exists, as one sick GPU
 * of a host does; the others still answer. */
static void gpu_hang_while_faulted(unsigned int index)
{
    struct timespec step = {0, 20 * 1000 * 1000};
    char name[32];
    snprintf(name, sizeof name, "hang%u", index);
    while (fault_exists(name))
        nanosleep(&step, NULL);
}

static int gpu_is_lost(unsigned int index)
{
    char name[32];
    snprintf(name, sizeof name, "lost%u", index);
    return fault_exists(name);
}

/* Every entry point starts here: the hang fault, then the init check. */
#define ENTER()                                       \
    do {                                              \
        hang_while_faulted();                         \
        if (g_refs <= 0)                              \
            return NVML_ERROR_UNINITIALIZED;          \
    } while (0)

#define ENTER_DEV(dev)                                                   \
    do {                                                                 \
        ENTER();                                                         \
        if ((dev) < g_devs || (dev) >= g_devs + g_count)                 \
            return NVML_ERROR_INVALID_ARGUMENT;                          \
        gpu_hang_while_faulted((dev)->index);                            \
        if (gpu_is_lost((dev)->index))                                   \
            return NVML_ERROR_GPU_IS_LOST;                               \
    } while (0)

static nvmlReturn_t copy_string(char *dst, unsigned int len, const char *src)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, src, strlen(src) + 1);
    return NVML_SUCCESS;
}

/* ---- config ---------------------------------------------------------- */

static int load_config(const char *root)
{
    char path[4352], line[512];
    FILE *f;
    unsigned int i;

    snprintf(path, sizeof path, "%s/nvml/config", root);
    f = fopen(path, "re");
    if (!f)
        return -1;
    g_count = 0;
    for (i = 0; i < MAX_GPUS; i++) {
        g_devs[i].index = i;
        g_devs[i].uuid[0] = 0;
    }
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '='), *val;
        line[strcspn(line, "\r\n")] = 0;
        if (!eq)
            continue;
        *eq = 0;
        val = eq + 1;
        if (!strcmp(line, "count"))
            g_count = (unsigned)strtoul(val, NULL, 10);
        else if (!strcmp(line, "name"))
            snprintf(g_name, sizeof g_name, "%s", val);
        else if (!strcmp(line, "memory_mib"))
            g_memory_mib = strtoull(val, NULL, 10);
        else if (!strcmp(line, "reserved_mib"))
            g_reserved_mib = strtoull(val, NULL, 10);
        else if (!strcmp(line, "driver_version"))
            snprintf(g_driver, sizeof g_driver, "%s", val);
        else if (!strcmp(line, "release_delay_ms"))
            g_delay_ms = strtoll(val, NULL, 10);
        else if (!strcmp(line, "energy_period_ms"))
            g_energy_period_ms = strtoll(val, NULL, 10);
        else if (!strcmp(line, "power_max_w"))
            g_power_max_w = strtoll(val, NULL, 10);
        else if (!strcmp(line, "sm_clock_max_mhz"))
            g_sm_clock_max = strtoll(val, NULL, 10);
        else if (!strcmp(line, "sm_clock_default_mhz"))
            g_sm_clock_default = strtoll(val, NULL, 10);
        else if (!strcmp(line, "sm_clock_idle_mhz"))
            g_sm_clock_idle = strtoll(val, NULL, 10);
        else if (!strcmp(line, "mem_clock_mhz"))
            g_mem_clock = strtoll(val, NULL, 10);
        else if (!strncmp(line, "uuid", 4) && isdigit((unsigned char)line[4])) {
            unsigned long n = strtoul(line + 4, NULL, 10);
            if (n < MAX_GPUS)
                snprintf(g_devs[n].uuid, sizeof g_devs[n].uuid, "%s", val);
        }
    }
    fclose(f);
    if (g_count > MAX_GPUS)
        g_count = MAX_GPUS;
    for (i = 0; i < g_count; i++) /* a config without uuids still gets stable ones */
        if (!g_devs[i].uuid[0])
            snprintf(g_devs[i].uuid, sizeof g_devs[i].uuid,
                     "GPU-fa4e0000-0000-4000-8000-%012x", i);
    return 0;
}

/* ---- processes --------------------------------------------------------- */

/* Field 22 (starttime) of /proc/PID/stat; 0 when the process is not visible. */
static unsigned long long proc_starttime(long pid)
{
    char path[64], buf[1024], *p;
    unsigned long long st = 0;
    int fd, n, field;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = (int)read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    if (!p)
        return 0;
    for (field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (p)
        st = strtoull(p + 1, NULL, 10);
    return st;
}

/* The innermost PID in /proc/PID/status NSpid, i.e. what the process calls itself. */
static long proc_inner_pid(long pid)
{
    char path[64], line[256];
    long inner = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    f = fopen(path, "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "NSpid:", 6)) {
            char *tok = strtok(line + 6, " \t\n");
            while (tok) {
                inner = strtol(tok, NULL, 10);
                tok = strtok(NULL, " \t\n");
            }
            break;
        }
    }
    fclose(f);
    return inner;
}

/* Map a holder's (pid, starttime), recorded in its own PID namespace, to the PID
 * the caller's /proc shows, or -1 when the caller cannot see it (drivers >= 535). */
static long visible_pid(long pid, unsigned long long starttime)
{
    DIR *d;
    struct dirent *e;
    long found = -1;

    if (proc_starttime(pid) == starttime)
        return pid;
    d = opendir("/proc");
    if (!d)
        return -1;
    while ((e = readdir(d)) && found < 0) {
        long cand;
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        cand = strtol(e->d_name, NULL, 10);
        if (proc_starttime(cand) == starttime && proc_inner_pid(cand) == pid)
            found = cand;
    }
    closedir(d);
    return found;
}

/* ---- allocations -------------------------------------------------------- */

typedef struct { long pid; unsigned long long mib; } holder_t;

typedef struct {
    unsigned long long used_mib; /* live + recently released */
    int nholders;
    holder_t holders[MAX_PROCS];
} scan_t;

static void read_alloc(int fd, long *pid, unsigned long long *starttime,
                       unsigned long long *mib)
{
    char buf[1024], *line, *save = NULL;
    int n = (int)pread(fd, buf, sizeof buf - 1, 0);
    *pid = -1;
    *starttime = 0;
    *mib = 0;
    if (n <= 0)
        return;
    buf[n] = 0;
    for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "pid=", 4))
            *pid = strtol(line + 4, NULL, 10);
        else if (!strncmp(line, "starttime=", 10))
            *starttime = strtoull(line + 10, NULL, 10);
        else if (!strncmp(line, "mib=", 4))
            *mib = strtoull(line + 4, NULL, 10);
    }
}

static void add_holder(scan_t *s, long pid, unsigned long long mib)
{
    int i;
    for (i = 0; i < s->nholders; i++)
        if (s->holders[i].pid == pid) {
            s->holders[i].mib += mib;
            return;
        }
    if (s->nholders < MAX_PROCS) {
        s->holders[s->nholders].pid = pid;
        s->holders[s->nholders].mib = mib;
        s->nholders++;
    }
}

/* One entry of alloc/: count it, and age it when its holder is gone. */
static void scan_entry(int dirfd, const char *name, unsigned int gpu, long long now,
                       scan_t *s)
{
    long pid;
    unsigned long long st, mib;
    unsigned int g;
    int fd;

    if (sscanf(name + 2, "%u-", &g) != 1 || g != gpu)
        return;
    fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* removed meanwhile (early release by its holder) */
    read_alloc(fd, &pid, &st, &mib);

    if (name[0] == 'a') {
        if (flock(fd, LOCK_SH | LOCK_NB) != 0) { /* holder alive: it holds LOCK_EX */
            long vis = visible_pid(pid, st);
            s->used_mib += mib;
            if (vis > 0)
                add_holder(s, vis, mib);
        } else if (g_delay_ms <= 0) { /* holder gone, no delay: free at once (as on an H200) */
            unlinkat(dirfd, name, 0);
        } else { /* holder gone (exited, or a zombie): start the release clock */
            char gone[512];
            flock(fd, LOCK_UN);
            snprintf(gone, sizeof gone, "r-%s-%lld", name + 2, now);
            renameat(dirfd, name, dirfd, gone);
            s->used_mib += mib;
        }
    } else {
        const char *dash = strrchr(name, '-');
        long long since = dash ? strtoll(dash + 1, NULL, 10) : 0;
        if (now - since >= g_delay_ms)
            unlinkat(dirfd, name, 0);
        else
            s->used_mib += mib;
    }
    close(fd);
}

/* Readers serialise on alloc/.lock, so two readers never age one entry twice. */
static int scan_gpu(unsigned int gpu, scan_t *s)
{
    char path[4352];
    DIR *d;
    struct dirent *e;
    int lockfd;
    long long now = now_ms();

    memset(s, 0, sizeof *s);
    snprintf(path, sizeof path, "%s/nvml/alloc/.lock", g_root);
    lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lockfd < 0)
        lockfd = open(path, O_RDONLY | O_CLOEXEC);
    if (lockfd < 0)
        return -1;
    pthread_mutex_lock(&g_mu);
    while (flock(lockfd, LOCK_EX) != 0 && errno == EINTR)
        ;
    snprintf(path, sizeof path, "%s/nvml/alloc", g_root);
    d = opendir(path);
    if (d) {
        while ((e = readdir(d))) {
            if ((e->d_name[0] == 'a' || e->d_name[0] == 'r') && e->d_name[1] == '-')
                scan_entry(dirfd(d), e->d_name, gpu, now, s);
        }
        closedir(d);
    }
    flock(lockfd, LOCK_UN);
    pthread_mutex_unlock(&g_mu);
    close(lockfd);
    return d ? 0 : -1;
}

/* ---- init / system ------------------------------------------------------- */

/* The device files a real NVML keeps open from init to the last shutdown. */
static void open_device_files(const char *root)
{
    static const char *shared[] = {"nvidiactl", "nvidia-uvm", "nvidia-caps/nvidia-cap1",
                                   "nvidia-caps/nvidia-cap2"};
    char path[4352];
    unsigned int i;

    g_ndevfds = 0;
    for (i = 0; i < 4 + g_count; i++) {
        int fd;
        if (i < 4)
            snprintf(path, sizeof path, "%s/dev/%s", root, shared[i]);
        else
            snprintf(path, sizeof path, "%s/dev/nvidia%u", root, i - 4);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            g_devfds[g_ndevfds++] = fd;
    }
}

static void close_device_files(void)
{
    while (g_ndevfds > 0)
        close(g_devfds[--g_ndevfds]);
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    const char *root;
    (void)flags;
    hang_while_faulted();
    root = getenv("FAKE_NVML_ROOT");
    if (!root || !root[0]) {
        fprintf(stderr, "fake NVML: FAKE_NVML_ROOT is not set; "
                        "run `eval \"$(sim/simctl gpu env ROOT)\"` first\n");
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    pthread_mutex_lock(&g_mu);
    snprintf(g_root, sizeof g_root, "%s", root);
    if (load_config(g_root) != 0) {
        pthread_mutex_unlock(&g_mu);
        fprintf(stderr, "fake NVML: cannot read %s/nvml/config; "
                        "run `sim/simctl gpu init %s` first\n", root, root);
        g_root[0] = 0;
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    if (g_refs == 0)
        open_device_files(g_root);
    g_refs++;
    pthread_mutex_unlock(&g_mu);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void)
{
    ENTER();
    pthread_mutex_lock(&g_mu);
    if (--g_refs == 0)
        close_device_files();
    pthread_mutex_unlock(&g_mu);
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_OPERATING_SYSTEM: return "Operating System Error";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    ENTER();
    return copy_string(version, length, g_driver);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    char buf[96];
    ENTER();
    snprintf(buf, sizeof buf, "13.%s", g_driver);
    return copy_string(version, length, buf);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    ENTER();
    if (!v)
        return NVML_ERROR_INVALID_ARGUMENT;
    *v = 13000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

/* ---- device lookup -------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    ENTER();
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = g_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
    ENTER();
    if (!dev || index >= g_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpu_is_lost(index)) /* as nvidia-smi: "Unable to determine the device handle" */
        return NVML_ERROR_GPU_IS_LOST;
    *dev = &g_devs[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev)
{
    return nvmlDeviceGetHandleByIndex_v2(index, dev);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev)
{
    unsigned int i;
    ENTER();
    if (!uuid || !dev)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < g_count; i++)
        if (!strcmp(uuid, g_devs[i].uuid)) {
            if (gpu_is_lost(i))
                return NVML_ERROR_GPU_IS_LOST;
            *dev = &g_devs[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index)
{
    ENTER_DEV(dev);
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = dev->index;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned int *minor)
{
    ENTER_DEV(dev);
    if (!minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    *minor = dev->index; /* /dev/nvidia<minor> */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length)
{
    ENTER_DEV(dev);
    return copy_string(name, length, g_name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length)
{
    ENTER_DEV(dev);
    return copy_string(uuid, length, dev->uuid);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    ENTER_DEV(dev);
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof *pci);
    pci->bus = 0x18 + 0x10 * dev->index;
    pci->pciDeviceId = 0x2BB510DE; /* RTX PRO 6000 Blackwell Server Edition */
    pci->pciSubSystemId = 0x204E10DE;
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *p) { return nvmlDeviceGetPciInfo_v3(d, p); }
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *p) { return nvmlDeviceGetPciInfo_v3(d, p); }

/* ---- memory ------------------------------------------------------------- */

static unsigned long long stuck_mib(unsigned int gpu); /* the health file's stuck_mib (below) */

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem)
{
    scan_t s;
    ENTER_DEV(dev);
    if (!mem)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (scan_gpu(dev->index, &s) != 0)
        return NVML_ERROR_OPERATING_SYSTEM;
    mem->total = g_memory_mib * MIB;
    mem->used = (g_reserved_mib + s.used_mib + stuck_mib(dev->index)) * MIB;
    mem->free = mem->used < mem->total ? mem->total - mem->used : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem)
{
    scan_t s;
    unsigned long long taken;
    ENTER_DEV(dev);
    if (fault_exists("no_v2")) /* like a driver that predates the v2 query */
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (!mem)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mem->version != MEMORY_V2_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (scan_gpu(dev->index, &s) != 0)
        return NVML_ERROR_OPERATING_SYSTEM;
    mem->total = g_memory_mib * MIB;
    mem->reserved = g_reserved_mib * MIB;
    mem->used = (s.used_mib + stuck_mib(dev->index)) * MIB;
    taken = mem->reserved + mem->used;
    mem->free = taken < mem->total ? mem->total - taken : 0;
    return NVML_SUCCESS;
}

/* ---- running processes ---------------------------------------------------- */

/* The NVML size protocol: too small a buffer -> INSUFFICIENT_SIZE with *count
 * set to what is needed; none running -> SUCCESS with *count = 0. */
static nvmlReturn_t list_compute(nvmlDevice_t dev, unsigned int *count,
                                 nvmlProcessInfo_t *v2, nvmlProcessInfo_v1_t *v1)
{
    scan_t s;
    int i;
    ENTER_DEV(dev);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (scan_gpu(dev->index, &s) != 0)
        return NVML_ERROR_OPERATING_SYSTEM;
    if (*count < (unsigned)s.nholders || (s.nholders > 0 && !v1 && !v2)) {
        *count = (unsigned)s.nholders;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (i = 0; i < s.nholders; i++) {
        if (v2) {
            v2[i].pid = (unsigned)s.holders[i].pid;
            v2[i].usedGpuMemory = s.holders[i].mib * MIB;
            v2[i].gpuInstanceId = NOT_AVAILABLE_U32; /* no MIG */
            v2[i].computeInstanceId = NOT_AVAILABLE_U32;
        } else {
            v1[i].pid = (unsigned)s.holders[i].pid;
            v1[i].usedGpuMemory = s.holders[i].mib * MIB;
        }
    }
    *count = (unsigned)s.nholders;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p)
{
    return list_compute(d, c, p, NULL);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p)
{
    return list_compute(d, c, p, NULL);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_v1_t *p)
{
    return list_compute(d, c, NULL, p);
}

/* No graphics (X, Vulkan) clients on a serving host. */
static nvmlReturn_t list_graphics(nvmlDevice_t dev, unsigned int *count)
{
    ENTER_DEV(dev);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *c, void *p) { (void)p; return list_graphics(d, c); }
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned int *c, void *p) { (void)p; return list_graphics(d, c); }
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned int *c, void *p) { (void)p; return list_graphics(d, c); }

/* ---- health ----------------------------------------------------------------
 *
 * ROOT/nvml/health/gpu<N> (optional, key=value, read at every call so a fault can
 * appear while a client runs; simlib/fakegpu.py set_health writes it). A key that is
 * absent keeps the healthy default below. The model:
 *   persistence=1                     nvmlDeviceGetPersistenceMode
 *   ecc_current=1 ecc_pending=1       nvmlDeviceGetEccMode
 *   ecc_dbe_volatile=0                nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE);
 *                                     the aggregate counter reads the same, corrected ones 0
 *   retired_sbe retired_dbe retired_pending
 *                                     page retirement: NOT_SUPPORTED (as on Ampere and later)
 *                                     unless one of the three is given
 *   remap_corr=0 remap_unc=0 remap_pending=0 remap_failure=0
 *                                     nvmlDeviceGetRemappedRows
 *   recovery_action=0                 field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230)
 *   inforom=valid|corrupt|not_supported   nvmlDeviceValidateInforom
 *   fabric_state=-1 fabric_status=0   nvmlDeviceGetGpuFabricInfoV; -1: NOT_SUPPORTED (a PCIe
 *                                     board, the default), 0-3: nvmlGpuFabricState_t
 *   pcie_width=16 pcie_width_max=16 pcie_gen=5 pcie_gen_max=5
 *   clocks_event_reasons=1            nvmlDeviceGetCurrentClocksEventReasons (1: GPU idle)
 *   temperature=35 temperature_slowdown=87 temperature_shutdown=92
 *   arch=10                           nvmlDeviceGetArchitecture (nvmlDeviceArchitecture_t:
 *                                     7 Ampere, 9 Hopper, 10 Blackwell)
 *   nvswitch=0 nvlink_peers=0         NVLink: nvswitch=1, links 0-17 active, each to an
 *                                     NVSwitch; else nvlink_peers, a bit mask of GPU
 *                                     indices, link L active to GPU L (a bridge); neither:
 *                                     the NVLink calls answer NOT_SUPPORTED (a PCIe board)
 *   stuck_mib=0                       memory held with no process (an unclean exit left the
 *                                     driver's bookkeeping behind): counted as used, listed
 *                                     for nobody; sim/bin/nvidia-smi -r clears it
 */

typedef struct {
    long long persistence, ecc_current, ecc_pending, ecc_dbe_volatile;
    long long retired_sbe, retired_dbe, retired_pending;
    int retirement_supported;
    long long remap_corr, remap_unc, remap_pending, remap_failure, recovery_action;
    char inforom[32];
    long long fabric_state, fabric_status;
    long long pcie_width, pcie_width_max, pcie_gen, pcie_gen_max;
    long long clocks_event_reasons, temperature, temperature_slowdown, temperature_shutdown;
    long long arch, nvswitch, nvlink_peers, stuck_mib;
    /* the file names them: fixed readings; else the load's (see "power") */
    int temperature_given, reasons_given;
} health_t;

static void read_health(unsigned int gpu, health_t *h)
{
    const char *root = state_root();
    char path[4352], line[256];
    FILE *f;

    memset(h, 0, sizeof *h);
    h->persistence = 1;
    h->ecc_current = h->ecc_pending = 1;
    snprintf(h->inforom, sizeof h->inforom, "valid");
    h->fabric_state = -1;
    h->pcie_width = h->pcie_width_max = 16;
    h->pcie_gen = h->pcie_gen_max = 5;
    h->clocks_event_reasons = 1;
    h->temperature = 35;
    h->temperature_slowdown = 87;
    h->temperature_shutdown = 92;
    h->arch = 10;
    if (!root || !root[0])
        return;
    snprintf(path, sizeof path, "%s/nvml/health/gpu%u", root, gpu);
    f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '='), *val;
        long long v;
        line[strcspn(line, "\r\n")] = 0;
        if (!eq)
            continue;
        *eq = 0;
        val = eq + 1;
        v = strtoll(val, NULL, 0);
#define KEY(name) else if (!strcmp(line, #name)) h->name = v
        if (!strcmp(line, "inforom"))
            snprintf(h->inforom, sizeof h->inforom, "%s", val);
        else if (!strcmp(line, "clocks_event_reasons")) {
            h->clocks_event_reasons = v;
            h->reasons_given = 1;
        } else if (!strcmp(line, "temperature")) {
            h->temperature = v;
            h->temperature_given = 1;
        }
        else if (!strcmp(line, "retired_sbe") || !strcmp(line, "retired_dbe")
                 || !strcmp(line, "retired_pending")) {
            h->retirement_supported = 1;
            if (line[8] == 's')
                h->retired_sbe = v;
            else if (line[8] == 'd')
                h->retired_dbe = v;
            else
                h->retired_pending = v;
        }
        KEY(persistence); KEY(ecc_current); KEY(ecc_pending); KEY(ecc_dbe_volatile);
        KEY(remap_corr); KEY(remap_unc); KEY(remap_pending); KEY(remap_failure);
        KEY(recovery_action); KEY(fabric_state); KEY(fabric_status);
        KEY(pcie_width); KEY(pcie_width_max); KEY(pcie_gen); KEY(pcie_gen_max);
        KEY(temperature_slowdown);
        KEY(temperature_shutdown);
        KEY(arch); KEY(nvswitch); KEY(nvlink_peers); KEY(stuck_mib);
#undef KEY
    }
    fclose(f);
}

static unsigned long long stuck_mib(unsigned int gpu)
{
    health_t h;
    read_health(gpu, &h);
    return h.stuck_mib > 0 ? (unsigned long long)h.stuck_mib : 0;
}

#define HEALTH(dev, h, out)                 \
    health_t h;                             \
    ENTER_DEV(dev);                         \
    if (!(out))                             \
        return NVML_ERROR_INVALID_ARGUMENT; \
    read_health((dev)->index, &h)

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode)
{
    HEALTH(dev, h, mode);
    *mode = h.persistence ? 1 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, int *current, int *pending)
{
    HEALTH(dev, h, current && pending);
    *current = h.ecc_current ? 1 : 0;
    *pending = h.ecc_pending ? 1 : 0;
    return NVML_SUCCESS;
}

/* errorType: 0 corrected, 1 uncorrected; counterType: 0 volatile, 1 aggregate. */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int errorType, int counterType,
                                         unsigned long long *count)
{
    HEALTH(dev, h, count);
    if (errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!h.ecc_current)
        return NVML_ERROR_NOT_SUPPORTED; /* no counters while ECC is off */
    *count = errorType == 1 ? (unsigned long long)h.ecc_dbe_volatile : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t dev, int *pending)
{
    HEALTH(dev, h, pending);
    if (!h.retirement_supported)
        return NVML_ERROR_NOT_SUPPORTED;
    *pending = h.retired_pending ? 1 : 0;
    return NVML_SUCCESS;
}

/* cause: 0 multiple single-bit errors, 1 double-bit error. The NVML size protocol:
 * too small a buffer -> INSUFFICIENT_SIZE with *count set to what is needed. */
static nvmlReturn_t retired_pages(nvmlDevice_t dev, int cause, unsigned int *count,
                                  unsigned long long *addresses, unsigned long long *timestamps)
{
    unsigned long long n, i;
    HEALTH(dev, h, count);
    if (!h.retirement_supported)
        return NVML_ERROR_NOT_SUPPORTED;
    if (cause < 0 || cause > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    n = (unsigned long long)(cause == 0 ? h.retired_sbe : h.retired_dbe);
    if (*count < n || (n > 0 && !addresses)) {
        *count = (unsigned int)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (i = 0; i < n; i++) {
        addresses[i] = 0x100000ULL * (i + 1) + (unsigned long long)cause;
        if (timestamps)
            timestamps[i] = 1764900000ULL + i;
    }
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t dev, int cause, unsigned int *count,
                                          unsigned long long *addresses, unsigned long long *timestamps)
{
    return retired_pages(dev, cause, count, addresses, timestamps);
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t dev, int cause, unsigned int *count,
                                       unsigned long long *addresses)
{
    return retired_pages(dev, cause, count, addresses, NULL);
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned int *corr, unsigned int *unc,
                                       unsigned int *pending, unsigned int *failure)
{
    HEALTH(dev, h, corr && unc && pending && failure);
    *corr = (unsigned)h.remap_corr;
    *unc = (unsigned)h.remap_unc;
    *pending = h.remap_pending ? 1 : 0;
    *failure = h.remap_failure ? 1 : 0;
    return NVML_SUCCESS;
}

/* nvmlFieldValue_t as nvidia-ml-py 13 declares it (c_nvmlFieldValue_t). */
typedef struct {
    unsigned int fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;
    int nvmlReturn;
    union {
        double dVal;
        unsigned int uiVal;
        unsigned long ulVal;
        unsigned long long ullVal;
        long long sllVal;
        int siVal;
        unsigned short usVal;
    } value;
} nvmlFieldValue_t;

#define FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define VALUE_TYPE_UNSIGNED_INT 1

/* Each value carries its own return; the call fails only on bad arguments. */
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int count, nvmlFieldValue_t *values)
{
    int i;
    struct timespec ts;
    HEALTH(dev, h, values);
    clock_gettime(CLOCK_REALTIME, &ts);
    for (i = 0; i < count; i++) {
        values[i].timestamp = (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
        values[i].latencyUsec = 0;
        if (values[i].fieldId == FI_DEV_GET_GPU_RECOVERY_ACTION) {
            values[i].valueType = VALUE_TYPE_UNSIGNED_INT;
            values[i].value.ullVal = 0;
            values[i].value.uiVal = (unsigned)h.recovery_action;
            values[i].nvmlReturn = NVML_SUCCESS;
        } else {
            values[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t dev)
{
    HEALTH(dev, h, 1);
    if (!strcmp(h.inforom, "corrupt"))
        return NVML_ERROR_CORRUPTED_INFOROM;
    if (!strcmp(h.inforom, "not_supported"))
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

/* nvmlGpuFabricInfo_v2_t (0x02000024) and _v3_t (0x03000028, adds healthSummary). */
typedef struct {
    unsigned int version;
    unsigned char clusterUuid[16];
    int status;
    unsigned int cliqueId;
    unsigned int state;
    unsigned int healthMask;
    unsigned char healthSummary; /* v3 only */
} nvmlGpuFabricInfoV_t;

/* ---- architecture and NVLink (what gpu_release's reset decides the peer set from) ---- */

#define NVSWITCH_LINKS 18 /* an H100/H200 SXM's NVLink count */

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t dev, unsigned int *arch)
{
    HEALTH(dev, h, arch);
    *arch = (unsigned)h.arch;
    return NVML_SUCCESS;
}

/* NOT_SUPPORTED without NVLink; INVALID_ARGUMENT past the last link; else whether LINK is active. */
static nvmlReturn_t nvlink_link(const health_t *h, unsigned int link, int *active)
{
    if (!h->nvswitch && !h->nvlink_peers)
        return NVML_ERROR_NOT_SUPPORTED;
    if (link >= (h->nvswitch ? NVSWITCH_LINKS : MAX_GPUS))
        return NVML_ERROR_INVALID_ARGUMENT;
    *active = h->nvswitch ? 1 : (int)((h->nvlink_peers >> link) & 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link, unsigned int *isActive)
{
    int active = 0;
    nvmlReturn_t r;
    HEALTH(dev, h, isActive);
    r = nvlink_link(&h, link, &active);
    *isActive = (unsigned)active;
    return r;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t dev, unsigned int link, int *type)
{
    int active = 0;
    nvmlReturn_t r;
    HEALTH(dev, h, type);
    r = nvlink_link(&h, link, &active);
    if (r != NVML_SUCCESS)
        return r;
    *type = h.nvswitch ? 2 : 0; /* NVML_NVLINK_DEVICE_TYPE_SWITCH : _GPU */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *pci)
{
    int active = 0;
    nvmlReturn_t r;
    HEALTH(dev, h, pci);
    r = nvlink_link(&h, link, &active);
    if (r != NVML_SUCCESS)
        return r;
    if (!active)
        return NVML_ERROR_NOT_FOUND;
    memset(pci, 0, sizeof *pci);
    pci->bus = h.nvswitch ? 0xA0 + link / 5 : 0x18 + 0x10 * link; /* a switch's, else GPU LINK's */
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
    return NVML_SUCCESS;
}

#define FABRIC_INFO_V2 0x02000024u
#define FABRIC_INFO_V3 0x03000028u

nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t dev, nvmlGpuFabricInfoV_t *info)
{
    HEALTH(dev, h, info);
    if (info->version != FABRIC_INFO_V2 && info->version != FABRIC_INFO_V3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (h.fabric_state < 0)
        return NVML_ERROR_NOT_SUPPORTED; /* no NVSwitch: a PCIe board */
    memset(info->clusterUuid, 0, sizeof info->clusterUuid);
    info->status = (int)h.fabric_status;
    info->cliqueId = 0;
    info->state = (unsigned)h.fabric_state;
    info->healthMask = 0;
    if (info->version == FABRIC_INFO_V3)
        info->healthSummary = 0;
    return NVML_SUCCESS;
}

#define UINT_GETTER(fn, field)                              \
    nvmlReturn_t fn(nvmlDevice_t dev, unsigned int *out)    \
    {                                                       \
        HEALTH(dev, h, out);                                \
        *out = (unsigned)h.field;                           \
        return NVML_SUCCESS;                                \
    }

UINT_GETTER(nvmlDeviceGetCurrPcieLinkWidth, pcie_width)
UINT_GETTER(nvmlDeviceGetMaxPcieLinkWidth, pcie_width_max)
UINT_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, pcie_gen)
UINT_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, pcie_gen_max)
UINT_GETTER(nvmlDeviceGetGpuMaxPcieLinkGeneration, pcie_gen_max)

/* threshold: 0 shutdown, 1 slowdown; the others are not modelled. */
nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t dev, int threshold, unsigned int *temp)
{
    HEALTH(dev, h, temp);
    if (threshold == 0)
        *temp = (unsigned)h.temperature_shutdown;
    else if (threshold == 1)
        *temp = (unsigned)h.temperature_slowdown;
    else
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

/* ---- power -----------------------------------------------------------------
 *
 * ROOT/nvml/power/gpu<N>: one line of integers, rewritten atomically by
 * simlib/fakegpu.py (set_load, and set_health, which changes what a load draws):
 *   t_ms e_uj p_mw prev_p_mw load_milli vpow_ns vtherm_ns pow_active therm_active
 * Since CLOCK_MONOTONIC t_ms the GPU draws p_mw (before it, prev_p_mw); the energy it
 * had drawn at t_ms is e_uj, the power- and thermal-violation times vpow_ns, vtherm_ns,
 * growing while pow_active / therm_active. load_milli is the server's load (0 idle,
 * 1000 full batch). The model, computed on the Python side, is sim/README.md's:
 *   energy counter  e_uj + p_mw x (t - t_ms), read at the last multiple of
 *                   energy_period_ms (100 ms, as an H200's counter updates), in mJ
 *   power usage     p_mw now
 *   SM clock        idle: sm_clock_idle_mhz; busy: sm_clock_max_mhz, or half of
 *                   sm_clock_default_mhz while a slowdown reason (0x8 HW slowdown,
 *                   0x20/0x40 thermal, 0x80 power brake) is set in the health file
 *   memory clock    mem_clock_mhz
 *   reasons         the health file's when it names them, else 0x1 (GPU idle) while
 *                   idle and none while busy
 *   temperature     the health file's when it names one, else 35 + 45 x load
 *   utilisation     gpu 100 % while busy; memory 60 % x load
 * No power file (or fault no_energy): the energy counter is NOT_SUPPORTED (the
 * power reading stays), as on a driver or board without it.
 */

typedef struct {
    long long t_ms, e_uj, p_mw, prev_p_mw, load_milli, vpow_ns, vtherm_ns, pow_active, therm_active;
    int present;
} power_t;

static void read_power(unsigned int gpu, power_t *p)
{
    const char *root = state_root();
    char path[4352];
    FILE *f;

    memset(p, 0, sizeof *p);
    p->p_mw = p->prev_p_mw = 0;
    if (!root || !root[0])
        return;
    snprintf(path, sizeof path, "%s/nvml/power/gpu%u", root, gpu);
    f = fopen(path, "re");
    if (!f)
        return;
    if (fscanf(f, "%lld %lld %lld %lld %lld %lld %lld %lld %lld", &p->t_ms, &p->e_uj, &p->p_mw,
               &p->prev_p_mw, &p->load_milli, &p->vpow_ns, &p->vtherm_ns, &p->pow_active,
               &p->therm_active) == 9)
        p->present = 1;
    fclose(f);
}

#define SLOWDOWN_REASONS 0xE8ULL /* HW slowdown, SW and HW thermal, HW power brake */

#define POWER(dev, h, p, out)               \
    health_t h;                             \
    power_t p;                              \
    ENTER_DEV(dev);                         \
    if (!(out))                             \
        return NVML_ERROR_INVALID_ARGUMENT; \
    read_health((dev)->index, &h);          \
    read_power((dev)->index, &p)

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *energy)
{
    long long now, tq, period;
    double uj;
    POWER(dev, h, p, energy);
    if (!p.present || fault_exists("no_energy"))
        return NVML_ERROR_NOT_SUPPORTED;
    now = now_ms();
    period = g_energy_period_ms > 0 ? g_energy_period_ms : 1;
    tq = now - now % period; /* the counter's last update */
    if (tq >= p.t_ms)
        uj = (double)p.e_uj + (double)p.p_mw * (double)(tq - p.t_ms);
    else
        uj = (double)p.e_uj - (double)p.prev_p_mw * (double)(p.t_ms - tq);
    *energy = uj > 0 ? (unsigned long long)(uj / 1000.0) : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw)
{
    POWER(dev, h, p, mw);
    *mw = (unsigned)(p.present ? p.p_mw : 0);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned int *mw)
{
    HEALTH(dev, h, mw);
    *mw = (unsigned)(g_power_max_w * 1000);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned int *mw)
{
    return nvmlDeviceGetEnforcedPowerLimit(dev, mw);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *reasons)
{
    POWER(dev, h, p, reasons);
    *reasons = h.reasons_given ? (unsigned long long)h.clocks_event_reasons
                               : (p.load_milli > 0 ? 0ULL : 0x1ULL);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *reasons)
{
    return nvmlDeviceGetCurrentClocksEventReasons(dev, reasons);
}

/* sensor 0: NVML_TEMPERATURE_GPU, the only one. */
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *temp)
{
    POWER(dev, h, p, temp);
    if (sensor != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *temp = h.temperature_given ? (unsigned)h.temperature
                                : (unsigned)(35 + 45 * p.load_milli / 1000);
    return NVML_SUCCESS;
}

/* type: 0 graphics, 1 SM, 2 memory, 3 video. */
static long long clock_now(const health_t *h, const power_t *p, int type)
{
    if (type == 2)
        return g_mem_clock;
    if (p->load_milli <= 0)
        return g_sm_clock_idle;
    if ((unsigned long long)h->clocks_event_reasons & SLOWDOWN_REASONS)
        return g_sm_clock_default / 2;
    return g_sm_clock_max;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned int *clock)
{
    POWER(dev, h, p, clock);
    if (type < 0 || type > 3)
        return NVML_ERROR_INVALID_ARGUMENT;
    *clock = (unsigned)clock_now(&h, &p, type);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned int *clock)
{
    HEALTH(dev, h, clock);
    if (type < 0 || type > 3)
        return NVML_ERROR_INVALID_ARGUMENT;
    *clock = (unsigned)(type == 2 ? g_mem_clock : g_sm_clock_max);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t dev, int type, unsigned int *clock)
{
    HEALTH(dev, h, clock);
    if (type < 0 || type > 3)
        return NVML_ERROR_INVALID_ARGUMENT;
    *clock = (unsigned)(type == 2 ? g_mem_clock : g_sm_clock_default);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t dev, int type, unsigned int *clock)
{
    return nvmlDeviceGetDefaultApplicationsClock(dev, type, clock);
}

/* clockId: 0 current, 1 applications target, 2 applications default, 3 customer boost max. */
nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t dev, int type, int id, unsigned int *clock)
{
    POWER(dev, h, p, clock);
    if (type < 0 || type > 3 || id < 0 || id > 3)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (id == 0)
        *clock = (unsigned)clock_now(&h, &p, type);
    else if (id == 3)
        *clock = (unsigned)(type == 2 ? g_mem_clock : g_sm_clock_max);
    else
        *clock = (unsigned)(type == 2 ? g_mem_clock : g_sm_clock_default);
    return NVML_SUCCESS;
}

typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *util)
{
    POWER(dev, h, p, util);
    util->gpu = p.load_milli > 0 ? 100 : 0;
    util->memory = (unsigned)(60 * p.load_milli / 1000);
    return NVML_SUCCESS;
}

typedef struct { unsigned long long referenceTime, violationTime; } nvmlViolationTime_t;

/* perfPolicyType: 0 power, 1 thermal; the others are not modelled. violationTime in ns. */
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t dev, int policy, nvmlViolationTime_t *viol)
{
    struct timespec ts;
    long long since;
    POWER(dev, h, p, viol);
    if (policy != 0 && policy != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    clock_gettime(CLOCK_REALTIME, &ts);
    since = now_ms() - p.t_ms;
    if (!p.present || since < 0)
        since = 0;
    viol->referenceTime = (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000ULL;
    if (policy == 0)
        viol->violationTime = (unsigned long long)(p.vpow_ns + (p.pow_active ? since * 1000000LL : 0));
    else
        viol->violationTime = (unsigned long long)(p.vtherm_ns + (p.therm_active ? since * 1000000LL : 0));
    return NVML_SUCCESS;
}
