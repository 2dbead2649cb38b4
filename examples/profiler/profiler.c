/*
 * profiler.c - a minimal CoreCLR profiler in plain C, for attach and detach.
 *
 * It is the smallest library the .NET runtime accepts as an attaching
 * profiler: an exported DllGetClassObject, an IClassFactory and one object
 * implementing ICorProfilerCallback3 with the full 83-slot vtable. It does no
 * profiling; it records what the runtime does to it in a log file so that a
 * test (or you) can see every step, and it obeys a command word at the start
 * of the client data sent with the attach request.
 *
 * Build (Linux x86-64):
 *   gcc -shared -fPIC -fvisibility=hidden -O2 -o libclrdiagprof.so profiler.c
 *
 * CLSID: {2FB05C3A-1410-4825-9389-C5F72ECDDF83}
 *
 * Client data: the bytes up to the first '\n' (or all of them when there is
 * no '\n') are the command word; whatever follows is free for you:
 *   detach    attach, then ask the runtime to detach from ProfilerAttachComplete
 *   stay      attach and stay attached (also: empty data, or any other bytes)
 *   fail      refuse: InitializeForAttach returns E_FAIL
 *   notimpl   refuse: InitializeForAttach returns E_NOTIMPL
 *
 * Log: when the environment variable CLRDIAG_PROFILER_LOG of the target
 * process names a file, every event is appended to it as one line, the event
 * name first, then key=value fields (see README.md). Nothing is written when
 * the variable is unset.
 *
 * Defining NO_ENTRY at build time exports the class factory under another
 * name, so the library lacks DllGetClassObject (the runtime then fails the
 * attach with ERROR_PROC_NOT_FOUND).
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- COM basics, as the runtime's PAL defines them on Linux ---------------- */

typedef int32_t HRESULT;
typedef uint32_t ULONG;
typedef uint32_t UINT;
typedef int32_t BOOL;

typedef struct {
    uint32_t Data1;
    uint16_t Data2;
    uint16_t Data3;
    uint8_t Data4[8];
} GUID;

#define S_OK ((HRESULT)0)
#define E_FAIL ((HRESULT)0x80004005)
#define E_NOTIMPL ((HRESULT)0x80004001)
#define E_NOINTERFACE ((HRESULT)0x80004002)
#define E_POINTER ((HRESULT)0x80004003)
#define E_OUTOFMEMORY ((HRESULT)0x8007000E)
#define CLASS_E_NOAGGREGATION ((HRESULT)0x80040110)
#define CLASS_E_CLASSNOTAVAILABLE ((HRESULT)0x80040111)

#define EXPORT __attribute__((visibility("default")))

/* The profiler's own CLSID. Pass it as --clsid; change it when you copy this. */
static const GUID CLSID_Profiler = {0x2fb05c3a, 0x1410, 0x4825, {0x93, 0x89, 0xc5, 0xf7, 0x2e, 0xcd, 0xdf, 0x83}};

static const GUID IID_IUnknown = {0x00000000, 0x0000, 0x0000, {0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}};
static const GUID IID_IClassFactory = {0x00000001, 0x0000, 0x0000, {0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}};
static const GUID IID_ICorProfilerCallback = {0x176fbed1, 0xa55c, 0x4796, {0x98, 0xca, 0xa9, 0xda, 0x0e, 0xf8, 0x83, 0xe7}};
static const GUID IID_ICorProfilerCallback2 = {0x8a8cc829, 0xccf2, 0x49fe, {0xbb, 0xae, 0x0f, 0x02, 0x22, 0x28, 0x07, 0x1a}};
static const GUID IID_ICorProfilerCallback3 = {0x4fd2ed52, 0x7731, 0x4b8d, {0x94, 0x69, 0x03, 0xd2, 0xcc, 0x30, 0x86, 0xc5}};
static const GUID IID_ICorProfilerInfo3 = {0xb555ed4f, 0x452a, 0x4e54, {0x8b, 0x39, 0xb5, 0x36, 0x0b, 0xad, 0x32, 0xa0}};

static int guid_eq(const GUID *a, const GUID *b) { return memcmp(a, b, sizeof(GUID)) == 0; }

/* ---- the log ---------------------------------------------------------------- */

/* log_line appends one line to $CLRDIAG_PROFILER_LOG. One write per line, with
 * O_APPEND, so lines from different threads never interleave. */
__attribute__((format(printf, 1, 2))) static void log_line(const char *fmt, ...)
{
    const char *path = getenv("CLRDIAG_PROFILER_LOG");
    if (path == NULL || path[0] == '\0')
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, buf, (size_t)n);
    (void)w;
    close(fd);
}

/* log_data records the client data exactly: its length and every byte in hex. */
static void log_data(const char *mode, const uint8_t *data, UINT len)
{
    const char *path = getenv("CLRDIAG_PROFILER_LOG");
    if (path == NULL || path[0] == '\0')
        return;
    static const char digits[] = "0123456789abcdef";
    size_t cap = 64 + 2 * (size_t)len;
    char *buf = malloc(cap);
    if (buf == NULL) {
        log_line("initialize-for-attach len=%u mode=%s data=unrecorded-out-of-memory", len, mode);
        return;
    }
    int n = snprintf(buf, cap, "initialize-for-attach len=%u mode=%s data=", len, mode);
    size_t off = n > 0 ? (size_t)n : 0;
    for (UINT i = 0; i < len; i++) {
        buf[off++] = digits[data[i] >> 4];
        buf[off++] = digits[data[i] & 15];
    }
    buf[off++] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, buf, off);
        (void)w;
        close(fd);
    }
    free(buf);
}

__attribute__((constructor)) static void on_load(void) { log_line("load pid=%d", (int)getpid()); }

/* Runs at dlclose: after a detach the runtime unloads the library. */
__attribute__((destructor)) static void on_unload(void) { log_line("unload"); }

/* ---- the client data command ----------------------------------------------- */

enum mode { MODE_STAY, MODE_DETACH, MODE_FAIL, MODE_NOTIMPL };

static const char *mode_name(enum mode m)
{
    switch (m) {
    case MODE_DETACH: return "detach";
    case MODE_FAIL: return "fail";
    case MODE_NOTIMPL: return "notimpl";
    default: return "stay";
    }
}

/* parse_mode reads the command word: the bytes before the first '\n', or all
 * of them. Empty, binary or unknown data means "stay". */
static enum mode parse_mode(const uint8_t *data, UINT len)
{
    if (data == NULL)
        return MODE_STAY;
    UINT n = 0;
    while (n < len && data[n] != '\n')
        n++;
    static const struct { const char *word; enum mode m; } words[] = {
        {"detach", MODE_DETACH}, {"stay", MODE_STAY}, {"fail", MODE_FAIL}, {"notimpl", MODE_NOTIMPL},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t wl = strlen(words[i].word);
        if (n == wl && memcmp(data, words[i].word, wl) == 0)
            return words[i].m;
    }
    return MODE_STAY;
}

/* ---- ICorProfilerInfo3, only the slots this profiler calls ---------------- */

typedef struct ProfilerInfo {
    void *const *vtbl; /* slot numbers: see the INFO_* constants */
} ProfilerInfo;

enum {
    INFO_RELEASE = 2,
    INFO_REQUEST_PROFILER_DETACH = 58, /* HRESULT (this, DWORD dwExpectedCompletionMilliseconds) */
};

typedef ULONG (*info_release_fn)(ProfilerInfo *);
typedef HRESULT (*info_request_detach_fn)(ProfilerInfo *, uint32_t);

/* ---- the profiler object ----------------------------------------------------- */

typedef struct Profiler {
    void *const *vtbl; /* the 83-slot ICorProfilerCallback3 vtable */
    volatile int32_t refs;
    ProfilerInfo *info; /* ICorProfilerInfo3, held from InitializeForAttach until the final Release */
    enum mode mode;
} Profiler;

static HRESULT cb_QueryInterface(Profiler *self, const GUID *riid, void **out)
{
    if (out == NULL)
        return E_POINTER;
    if (guid_eq(riid, &IID_IUnknown) || guid_eq(riid, &IID_ICorProfilerCallback) ||
        guid_eq(riid, &IID_ICorProfilerCallback2) || guid_eq(riid, &IID_ICorProfilerCallback3)) {
        __atomic_add_fetch(&self->refs, 1, __ATOMIC_SEQ_CST);
        *out = self;
        return S_OK;
    }
    *out = NULL;
    return E_NOINTERFACE;
}

static ULONG cb_AddRef(Profiler *self) { return (ULONG)__atomic_add_fetch(&self->refs, 1, __ATOMIC_SEQ_CST); }

static ULONG cb_Release(Profiler *self)
{
    int32_t n = __atomic_sub_fetch(&self->refs, 1, __ATOMIC_SEQ_CST);
    if (n == 0) {
        log_line("final-release");
        if (self->info != NULL)
            ((info_release_fn)self->info->vtbl[INFO_RELEASE])(self->info);
        free(self);
    }
    return (ULONG)n;
}

/* Slots with no work to do. The runtime only calls the callbacks enabled with
 * SetEventMask, and this profiler enables none, so these are never called
 * except Shutdown. A stub declared with only `this` is safe on SysV x86-64
 * for methods whose other arguments are inputs: the caller cleans up. */
static HRESULT cb_Nothing(Profiler *self)
{
    (void)self;
    return S_OK;
}

/* Two callbacks have out-parameters; give them real bodies in case a copy of
 * this file enables their events. */
static HRESULT cb_JITCachedFunctionSearchStarted(Profiler *self, uintptr_t functionId, BOOL *useCached)
{
    (void)self;
    (void)functionId;
    if (useCached != NULL)
        *useCached = 1;
    return S_OK;
}

static HRESULT cb_JITInlining(Profiler *self, uintptr_t caller, uintptr_t callee, BOOL *shouldInline)
{
    (void)self;
    (void)caller;
    (void)callee;
    if (shouldInline != NULL)
        *shouldInline = 1;
    return S_OK;
}

static HRESULT cb_Initialize(Profiler *self, void *infoUnk)
{
    (void)self;
    (void)infoUnk;
    /* Startup loading is not what this profiler is for. */
    log_line("initialize-at-startup-refused");
    return E_FAIL;
}

static HRESULT cb_Shutdown(Profiler *self)
{
    (void)self;
    log_line("shutdown");
    return S_OK;
}

/* Slot 80: the attach counterpart of Initialize. */
static HRESULT cb_InitializeForAttach(Profiler *self, void *infoUnk, const void *clientData, UINT clientDataSize)
{
    const uint8_t *data = clientData;
    if (data == NULL)
        clientDataSize = 0;
    self->mode = parse_mode(data, clientDataSize);
    log_data(mode_name(self->mode), data, clientDataSize);
    switch (self->mode) {
    case MODE_FAIL:
        log_line("initialize-for-attach-result hr=0x%08x", (uint32_t)E_FAIL);
        return E_FAIL;
    case MODE_NOTIMPL:
        log_line("initialize-for-attach-result hr=0x%08x", (uint32_t)E_NOTIMPL);
        return E_NOTIMPL;
    default:
        break;
    }
    if (infoUnk == NULL) {
        log_line("initialize-for-attach-result hr=0x%08x no-info", (uint32_t)E_POINTER);
        return E_POINTER;
    }
    /* IUnknown::QueryInterface is slot 0 of every interface. */
    typedef HRESULT (*qi_fn)(void *, const GUID *, void **);
    void *info = NULL;
    HRESULT hr = ((qi_fn)(*(void *const **)infoUnk)[0])(infoUnk, &IID_ICorProfilerInfo3, &info);
    if (hr != S_OK || info == NULL) {
        log_line("initialize-for-attach-result hr=0x%08x no-info3", (uint32_t)hr);
        return hr != S_OK ? hr : E_NOINTERFACE;
    }
    self->info = info;
    log_line("initialize-for-attach-result hr=0x%08x", (uint32_t)S_OK);
    return S_OK;
}

/* Slot 81: called after InitializeForAttach succeeded. RequestProfilerDetach
 * cannot be called earlier (the runtime answers NOT_YET_INITIALIZED). */
static HRESULT cb_ProfilerAttachComplete(Profiler *self)
{
    log_line("attach-complete mode=%s", mode_name(self->mode));
    if (self->mode == MODE_DETACH && self->info != NULL) {
        /* The runtime checks after max(300 ms, this value) that no profiler
         * code is on any stack, then calls ProfilerDetachSucceeded. */
        HRESULT hr = ((info_request_detach_fn)self->info->vtbl[INFO_REQUEST_PROFILER_DETACH])(self->info, 300);
        log_line("request-detach hr=0x%08x", (uint32_t)hr);
    }
    return S_OK;
}

/* Slot 82: the last callback before the final Release and dlclose. */
static HRESULT cb_ProfilerDetachSucceeded(Profiler *self)
{
    (void)self;
    log_line("detach-succeeded");
    return S_OK;
}

#define NOTHING ((void *)cb_Nothing)

/* The ICorProfilerCallback3 vtable: 3 IUnknown slots, 69 ICorProfilerCallback
 * slots, 8 ICorProfilerCallback2 slots, 3 ICorProfilerCallback3 slots. */
static void *const callback_vtbl[] = {
    /* IUnknown */
    /*  0 */ (void *)cb_QueryInterface,
    /*  1 */ (void *)cb_AddRef,
    /*  2 */ (void *)cb_Release,
    /* ICorProfilerCallback */
    /*  3 */ (void *)cb_Initialize,
    /*  4 */ (void *)cb_Shutdown,
    /*  5 AppDomainCreationStarted */ NOTHING,
    /*  6 AppDomainCreationFinished */ NOTHING,
    /*  7 AppDomainShutdownStarted */ NOTHING,
    /*  8 AppDomainShutdownFinished */ NOTHING,
    /*  9 AssemblyLoadStarted */ NOTHING,
    /* 10 AssemblyLoadFinished */ NOTHING,
    /* 11 AssemblyUnloadStarted */ NOTHING,
    /* 12 AssemblyUnloadFinished */ NOTHING,
    /* 13 ModuleLoadStarted */ NOTHING,
    /* 14 ModuleLoadFinished */ NOTHING,
    /* 15 ModuleUnloadStarted */ NOTHING,
    /* 16 ModuleUnloadFinished */ NOTHING,
    /* 17 ModuleAttachedToAssembly */ NOTHING,
    /* 18 ClassLoadStarted */ NOTHING,
    /* 19 ClassLoadFinished */ NOTHING,
    /* 20 ClassUnloadStarted */ NOTHING,
    /* 21 ClassUnloadFinished */ NOTHING,
    /* 22 FunctionUnloadStarted */ NOTHING,
    /* 23 JITCompilationStarted */ NOTHING,
    /* 24 JITCompilationFinished */ NOTHING,
    /* 25 */ (void *)cb_JITCachedFunctionSearchStarted,
    /* 26 JITCachedFunctionSearchFinished */ NOTHING,
    /* 27 JITFunctionPitched */ NOTHING,
    /* 28 */ (void *)cb_JITInlining,
    /* 29 ThreadCreated */ NOTHING,
    /* 30 ThreadDestroyed */ NOTHING,
    /* 31 ThreadAssignedToOSThread */ NOTHING,
    /* 32 RemotingClientInvocationStarted */ NOTHING,
    /* 33 RemotingClientSendingMessage */ NOTHING,
    /* 34 RemotingClientReceivingReply */ NOTHING,
    /* 35 RemotingClientInvocationFinished */ NOTHING,
    /* 36 RemotingServerReceivingMessage */ NOTHING,
    /* 37 RemotingServerInvocationStarted */ NOTHING,
    /* 38 RemotingServerInvocationReturned */ NOTHING,
    /* 39 RemotingServerSendingReply */ NOTHING,
    /* 40 UnmanagedToManagedTransition */ NOTHING,
    /* 41 ManagedToUnmanagedTransition */ NOTHING,
    /* 42 RuntimeSuspendStarted */ NOTHING,
    /* 43 RuntimeSuspendFinished */ NOTHING,
    /* 44 RuntimeSuspendAborted */ NOTHING,
    /* 45 RuntimeResumeStarted */ NOTHING,
    /* 46 RuntimeResumeFinished */ NOTHING,
    /* 47 RuntimeThreadSuspended */ NOTHING,
    /* 48 RuntimeThreadResumed */ NOTHING,
    /* 49 MovedReferences */ NOTHING,
    /* 50 ObjectAllocated */ NOTHING,
    /* 51 ObjectsAllocatedByClass */ NOTHING,
    /* 52 ObjectReferences */ NOTHING,
    /* 53 RootReferences */ NOTHING,
    /* 54 ExceptionThrown */ NOTHING,
    /* 55 ExceptionSearchFunctionEnter */ NOTHING,
    /* 56 ExceptionSearchFunctionLeave */ NOTHING,
    /* 57 ExceptionSearchFilterEnter */ NOTHING,
    /* 58 ExceptionSearchFilterLeave */ NOTHING,
    /* 59 ExceptionSearchCatcherFound */ NOTHING,
    /* 60 ExceptionOSHandlerEnter */ NOTHING,
    /* 61 ExceptionOSHandlerLeave */ NOTHING,
    /* 62 ExceptionUnwindFunctionEnter */ NOTHING,
    /* 63 ExceptionUnwindFunctionLeave */ NOTHING,
    /* 64 ExceptionUnwindFinallyEnter */ NOTHING,
    /* 65 ExceptionUnwindFinallyLeave */ NOTHING,
    /* 66 ExceptionCatcherEnter */ NOTHING,
    /* 67 ExceptionCatcherLeave */ NOTHING,
    /* 68 COMClassicVTableCreated */ NOTHING,
    /* 69 COMClassicVTableDestroyed */ NOTHING,
    /* 70 ExceptionCLRCatcherFound */ NOTHING,
    /* 71 ExceptionCLRCatcherExecute */ NOTHING,
    /* ICorProfilerCallback2 */
    /* 72 ThreadNameChanged */ NOTHING,
    /* 73 GarbageCollectionStarted */ NOTHING,
    /* 74 SurvivingReferences */ NOTHING,
    /* 75 GarbageCollectionFinished */ NOTHING,
    /* 76 FinalizeableObjectQueued */ NOTHING,
    /* 77 RootReferences2 */ NOTHING,
    /* 78 HandleCreated */ NOTHING,
    /* 79 HandleDestroyed */ NOTHING,
    /* ICorProfilerCallback3 */
    /* 80 */ (void *)cb_InitializeForAttach,
    /* 81 */ (void *)cb_ProfilerAttachComplete,
    /* 82 */ (void *)cb_ProfilerDetachSucceeded,
};

_Static_assert(sizeof callback_vtbl / sizeof callback_vtbl[0] == 83, "ICorProfilerCallback3 has 83 slots");

/* ---- the class factory -------------------------------------------------------- */

typedef struct ClassFactory {
    void *const *vtbl;
} ClassFactory;

static HRESULT cf_QueryInterface(ClassFactory *self, const GUID *riid, void **out)
{
    if (out == NULL)
        return E_POINTER;
    if (guid_eq(riid, &IID_IUnknown) || guid_eq(riid, &IID_IClassFactory)) {
        *out = self;
        return S_OK;
    }
    *out = NULL;
    return E_NOINTERFACE;
}

/* The factory is a static object: reference counting has nothing to free. */
static ULONG cf_AddRef(ClassFactory *self)
{
    (void)self;
    return 2;
}

static ULONG cf_Release(ClassFactory *self)
{
    (void)self;
    return 1;
}

static HRESULT cf_CreateInstance(ClassFactory *self, void *outer, const GUID *riid, void **out)
{
    (void)self;
    if (out == NULL)
        return E_POINTER;
    *out = NULL;
    if (outer != NULL)
        return CLASS_E_NOAGGREGATION;
    Profiler *p = calloc(1, sizeof *p);
    if (p == NULL)
        return E_OUTOFMEMORY;
    p->vtbl = callback_vtbl;
    p->refs = 1;
    HRESULT hr = cb_QueryInterface(p, riid, out);
    cb_Release(p); /* the QueryInterface reference is the caller's */
    log_line("create-instance hr=0x%08x", (uint32_t)hr);
    return hr;
}

static HRESULT cf_LockServer(ClassFactory *self, BOOL lock)
{
    (void)self;
    (void)lock;
    return S_OK;
}

static void *const factory_vtbl[] = {
    (void *)cf_QueryInterface, (void *)cf_AddRef, (void *)cf_Release, (void *)cf_CreateInstance, (void *)cf_LockServer,
};

static ClassFactory factory = {factory_vtbl};

/* ---- the entry point ------------------------------------------------------------ */

#ifdef NO_ENTRY
#define ENTRY_NAME NotDllGetClassObject
#else
#define ENTRY_NAME DllGetClassObject
#endif

/* DllGetClassObject is the only exported symbol: the runtime dlopens the
 * library, looks it up and asks it for an IClassFactory for the CLSID. */
EXPORT HRESULT ENTRY_NAME(const GUID *rclsid, const GUID *riid, void **out)
{
    if (out == NULL || rclsid == NULL || riid == NULL)
        return E_POINTER;
    *out = NULL;
    if (!guid_eq(rclsid, &CLSID_Profiler)) {
        log_line("get-class-object hr=0x%08x clsid-mismatch", (uint32_t)CLASS_E_CLASSNOTAVAILABLE);
        return CLASS_E_CLASSNOTAVAILABLE;
    }
    HRESULT hr = cf_QueryInterface(&factory, riid, out);
    log_line("get-class-object hr=0x%08x", (uint32_t)hr);
    return hr;
}
