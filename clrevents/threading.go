package clrevents

// ContentionStart (runtime event 81): a thread starts waiting for a lock.
type ContentionStart struct {
	// Flags: 0 managed lock, 1 native.
	Flags         uint8
	ClrInstanceID uint16
	// LockID, AssociatedObjectID and LockOwnerThreadID come with version
	// 2 (.NET 8).
	LockID             uint64
	AssociatedObjectID uint64
	LockOwnerThreadID  uint64
}

// DecodeContentionStart decodes ContentionStart versions 0-2.
func DecodeContentionStart(payload []byte, version uint8, ptrSize int) (ContentionStart, error) {
	c := newCursor("ContentionStart", payload, version, ptrSize)
	var e ContentionStart
	e.Flags = c.u8("ContentionFlags")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	if version >= 2 {
		e.LockID = c.ptr("LockID")
		e.AssociatedObjectID = c.ptr("AssociatedObjectID")
		e.LockOwnerThreadID = c.u64("LockOwnerThreadID")
	}
	return e, c.err
}

// ContentionStop (runtime event 91): the waiting thread got the lock.
type ContentionStop struct {
	Flags         uint8
	ClrInstanceID uint16
	// DurationNs is the wait (version 1, .NET 8); 0 before.
	DurationNs float64
}

// DecodeContentionStop decodes ContentionStop versions 0-1.
func DecodeContentionStop(payload []byte, version uint8) (ContentionStop, error) {
	c := newCursor("ContentionStop", payload, version, 8)
	var e ContentionStop
	e.Flags = c.u8("ContentionFlags")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	if version >= 1 {
		e.DurationNs = c.f64("DurationNs")
	}
	return e, c.err
}

// ThreadPoolWorkerThread is the payload of ThreadPoolWorkerThreadStart (50),
// Stop (51), RetirementStart/Stop (52/53) and Wait (57).
type ThreadPoolWorkerThread struct {
	ActiveWorkerThreadCount  uint32
	RetiredWorkerThreadCount uint32
	ClrInstanceID            uint16
}

// DecodeThreadPoolWorkerThread decodes the worker thread events.
func DecodeThreadPoolWorkerThread(payload []byte, version uint8) (ThreadPoolWorkerThread, error) {
	c := newCursor("ThreadPoolWorkerThread", payload, version, 8)
	var e ThreadPoolWorkerThread
	e.ActiveWorkerThreadCount = c.u32("ActiveWorkerThreadCount")
	e.RetiredWorkerThreadCount = c.u32("RetiredWorkerThreadCount")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// ThreadPoolAdjustmentSample (runtime event 54) is a throughput sample of
// the thread pool's hill-climbing algorithm.
type ThreadPoolAdjustmentSample struct {
	Throughput    float64
	ClrInstanceID uint16
}

// DecodeThreadPoolAdjustmentSample decodes event 54.
func DecodeThreadPoolAdjustmentSample(payload []byte, version uint8) (ThreadPoolAdjustmentSample, error) {
	c := newCursor("ThreadPoolWorkerThreadAdjustmentSample", payload, version, 8)
	var e ThreadPoolAdjustmentSample
	e.Throughput = c.f64("Throughput")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// ThreadPoolAdjustment (runtime event 55) is a change of the worker count.
type ThreadPoolAdjustment struct {
	AverageThroughput    float64
	NewWorkerThreadCount uint32
	// Reason: 0 warmup, 1 initializing, 2 random move, 3 climbing move,
	// 4 change point, 5 stabilizing, 6 starvation, 7 thread timed out.
	Reason        uint32
	ClrInstanceID uint16
}

// DecodeThreadPoolAdjustment decodes event 55.
func DecodeThreadPoolAdjustment(payload []byte, version uint8) (ThreadPoolAdjustment, error) {
	c := newCursor("ThreadPoolWorkerThreadAdjustmentAdjustment", payload, version, 8)
	var e ThreadPoolAdjustment
	e.AverageThroughput = c.f64("AverageThroughput")
	e.NewWorkerThreadCount = c.u32("NewWorkerThreadCount")
	e.Reason = c.u32("Reason")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// ThreadPoolAdjustmentStats (runtime event 56) is the state of the
// hill-climbing algorithm at an adjustment.
type ThreadPoolAdjustmentStats struct {
	Duration                       float64
	Throughput                     float64
	ThreadWave                     float64
	ThroughputWave                 float64
	ThroughputErrorEstimate        float64
	AverageThroughputErrorEstimate float64
	ThroughputRatio                float64
	Confidence                     float64
	NewControlSetting              float64
	NewThreadWaveMagnitude         uint16
	ClrInstanceID                  uint16
}

// DecodeThreadPoolAdjustmentStats decodes event 56.
func DecodeThreadPoolAdjustmentStats(payload []byte, version uint8) (ThreadPoolAdjustmentStats, error) {
	c := newCursor("ThreadPoolWorkerThreadAdjustmentStats", payload, version, 8)
	var e ThreadPoolAdjustmentStats
	e.Duration = c.f64("Duration")
	e.Throughput = c.f64("Throughput")
	e.ThreadWave = c.f64("ThreadWave")
	e.ThroughputWave = c.f64("ThroughputWave")
	e.ThroughputErrorEstimate = c.f64("ThroughputErrorEstimate")
	e.AverageThroughputErrorEstimate = c.f64("AverageThroughputErrorEstimate")
	e.ThroughputRatio = c.f64("ThroughputRatio")
	e.Confidence = c.f64("Confidence")
	e.NewControlSetting = c.f64("NewControlSetting")
	e.NewThreadWaveMagnitude = c.u16("NewThreadWaveMagnitude")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// ThreadPoolWorkItem is the payload of ThreadPoolEnqueue (61) and
// ThreadPoolDequeue (62): the work item's identity.
type ThreadPoolWorkItem struct {
	WorkID        uint64
	ClrInstanceID uint16
}

// DecodeThreadPoolWorkItem decodes events 61 and 62.
func DecodeThreadPoolWorkItem(payload []byte, version uint8, ptrSize int) (ThreadPoolWorkItem, error) {
	c := newCursor("ThreadPoolWorkItem", payload, version, ptrSize)
	var e ThreadPoolWorkItem
	e.WorkID = c.ptr("WorkID")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// WaitHandleWaitStart (runtime event 301, .NET 8+): a thread blocks on a
// wait handle (Monitor.Wait, WaitHandle.WaitOne...).
type WaitHandleWaitStart struct {
	// WaitSource: 0 unknown, 1 Monitor.Wait.
	WaitSource         uint8
	AssociatedObjectID uint64
	ClrInstanceID      uint16
}

// DecodeWaitHandleWaitStart decodes event 301.
func DecodeWaitHandleWaitStart(payload []byte, version uint8, ptrSize int) (WaitHandleWaitStart, error) {
	c := newCursor("WaitHandleWaitStart", payload, version, ptrSize)
	var e WaitHandleWaitStart
	e.WaitSource = c.u8("WaitSource")
	e.AssociatedObjectID = c.ptr("AssociatedObjectID")
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// WaitHandleWaitStop (runtime event 302) ends the wait.
type WaitHandleWaitStop struct {
	ClrInstanceID uint16
}

// DecodeWaitHandleWaitStop decodes event 302.
func DecodeWaitHandleWaitStop(payload []byte, version uint8) (WaitHandleWaitStop, error) {
	c := newCursor("WaitHandleWaitStop", payload, version, 8)
	var e WaitHandleWaitStop
	e.ClrInstanceID = c.u16("ClrInstanceID")
	return e, c.err
}

// SampleKind is what a SampleProfiler sample found the thread doing.
type SampleKind uint32

// Sample kinds.
const (
	SampleError    SampleKind = 0
	SampleExternal SampleKind = 1 // outside managed code (native, blocked)
	SampleManaged  SampleKind = 2 // running managed code
)

func (k SampleKind) String() string {
	switch k {
	case SampleError:
		return "Error"
	case SampleExternal:
		return "External"
	case SampleManaged:
		return "Managed"
	}
	return "Kind(" + itoa(uint64(k)) + ")"
}

// ThreadSample is the payload of the SampleProfiler's event 0. The event's
// thread and stack are the sampled thread's.
type ThreadSample struct {
	Type SampleKind
}

// DecodeThreadSample decodes a SampleProfiler sample.
func DecodeThreadSample(payload []byte, version uint8) (ThreadSample, error) {
	c := newCursor("ThreadSample", payload, version, 8)
	e := ThreadSample{Type: SampleKind(c.u32("Type"))}
	return e, c.err
}
