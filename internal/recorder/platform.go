package recorder

// The recorder writes 64-bit words with atomic instructions in place, in
// records laid out for 64-bit platforms (the event model's 88-byte Record):
// on a 32-bit platform those words are only 4-byte aligned and the first
// atomic store panics. devprof needs a 64-bit platform; on a 32-bit one this
// declaration is the compile error, with this comment beside it.
var _ [2*((32<<(^uintptr(0)>>63))/64) - 1]struct{ needsA64BitPlatform struct{} }
