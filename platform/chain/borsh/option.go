package borsh

// Option is a Borsh Option<T>: a value and whether it is there. A struct rather than a pointer so
// that decoding allocates nothing; the zero Option is None.
type Option[T any] struct {
	Value T
	Some  bool
}

// Some returns an Option holding v.
func Some[T any](v T) Option[T] { return Option[T]{Value: v, Some: true} }

// Get returns the value and whether it is there.
func (o Option[T]) Get() (T, bool) { return o.Value, o.Some }
