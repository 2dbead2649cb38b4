package clrevents

// DecodeFieldsN is decodeFields for the tests of package clrevents_test: it
// also returns how many payload bytes the layout covered.
var DecodeFieldsN = decodeFields
