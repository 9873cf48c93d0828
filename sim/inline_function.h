// File: sim/inline_function.h
//
// InlineFunction<void(Args...), kInlineBytes>: a move-only callable, called
// once as an rvalue like absl::AnyInvocable<void(Args...) &&>, whose target
// lives in kInlineBytes of inline storage when it fits (and moves without
// throwing), else in one heap allocation. The simulator's events and flow
// callbacks are mostly closures of 24 to 96 bytes (a few pointers, ids, a
// shared_ptr, a nested callback), larger than AnyInvocable's two words of
// inline storage, so each of them used to cost an allocation and a free.
//
// Semantics as AnyInvocable: default-constructed or assigned nullptr it is
// empty (== nullptr); constructing it from an empty function pointer or an
// empty callable wrapper (anything that converts to false) leaves it empty;
// calling an empty one is a programmer error (checked). Moving leaves the
// source empty.
//
// Thread safety: none (a value type).
#ifndef HEATSINK_SIM_INLINE_FUNCTION_H_
#define HEATSINK_SIM_INLINE_FUNCTION_H_

#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

#include "core/base/check.h"

namespace heatsink::sim {

template <typename Signature, size_t kInlineBytes>
class InlineFunction;

template <typename... Args, size_t kInlineBytes>
class InlineFunction<void(Args...), kInlineBytes> {
 public:
  InlineFunction() noexcept = default;
  InlineFunction(std::nullptr_t) noexcept {}  // NOLINT: implicit, as AnyInvocable

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, InlineFunction> &&
                                        !std::is_same_v<D, std::nullptr_t> &&
                                        std::is_invocable_r_v<void, D&&, Args...>>>
  InlineFunction(F&& f) {  // NOLINT: implicit, as AnyInvocable
    if constexpr (std::is_constructible_v<bool, const D&>) {
      if (!static_cast<bool>(f)) return;  // an empty pointer or wrapper
    }
    if constexpr (FitsInline<D>()) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      ::new (static_cast<void*>(storage_)) D*(new D(std::forward<F>(f)));
      ops_ = &kHeapOps<D>;
    }
  }

  InlineFunction(InlineFunction&& other) noexcept { TakeFrom(other); }
  InlineFunction& operator=(InlineFunction&& other) noexcept {
    if (this != &other) {
      Reset();
      TakeFrom(other);
    }
    return *this;
  }
  InlineFunction& operator=(std::nullptr_t) noexcept {
    Reset();
    return *this;
  }
  InlineFunction(const InlineFunction&) = delete;
  InlineFunction& operator=(const InlineFunction&) = delete;
  ~InlineFunction() { Reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  friend bool operator==(const InlineFunction& f, std::nullptr_t) noexcept {
    return f.ops_ == nullptr;
  }

  // Calls the target as an rvalue. The target stays (moved-from or not, as
  // the target leaves itself) until this object is destroyed or reassigned.
  void operator()(Args... args) && {
    HS_CHECK_MSG(ops_ != nullptr, "call of an empty InlineFunction");
    ops_->invoke(storage_, std::forward<Args>(args)...);
  }

  // Whether a callable of type F is held inline (for tests).
  template <typename F>
  static constexpr bool FitsInline() {
    return sizeof(F) <= kInlineBytes && alignof(F) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<F>;
  }

 private:
  struct Ops {
    void (*invoke)(void* storage, Args&&... args);
    // Move-constructs the target into `to` and destroys it at `from`.
    void (*relocate)(void* from, void* to) noexcept;
    void (*destroy)(void* storage) noexcept;
  };

  template <typename D>
  static constexpr Ops kInlineOps = {
      [](void* s, Args&&... args) {
        std::invoke(std::move(*static_cast<D*>(s)), std::forward<Args>(args)...);
      },
      [](void* from, void* to) noexcept {
        D* f = static_cast<D*>(from);
        ::new (to) D(std::move(*f));
        f->~D();
      },
      [](void* s) noexcept { static_cast<D*>(s)->~D(); },
  };
  template <typename D>
  static constexpr Ops kHeapOps = {
      [](void* s, Args&&... args) {
        std::invoke(std::move(**static_cast<D**>(s)), std::forward<Args>(args)...);
      },
      [](void* from, void* to) noexcept { ::new (to) D*(*static_cast<D**>(from)); },
      [](void* s) noexcept { delete *static_cast<D**>(s); },
  };

  void TakeFrom(InlineFunction& other) noexcept {
    if (other.ops_ == nullptr) return;
    other.ops_->relocate(other.storage_, storage_);
    ops_ = other.ops_;
    other.ops_ = nullptr;
  }
  void Reset() noexcept {
    if (ops_ == nullptr) return;
    const Ops* ops = ops_;
    ops_ = nullptr;
    ops->destroy(storage_);
  }

  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_INLINE_FUNCTION_H_
