//===- CheckedAccesses.cpp - A GPU image's memory accesses under the checker ===//
#include "CheckedAccesses.h"
#include "SourceSites.h"

#include "ompsim/device_runtime.h"

#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"

#include <string>
#include <vector>

using namespace llvm;

namespace ompsim::sim::gpu {
namespace {

/// One access an instruction makes: `Bytes` (a constant, or the intrinsic's
/// length) at `Pointer`, of `Kind` (OMPSIM_ACCESS_*).
struct AccessOf {
  Value *Pointer;
  Value *Bytes;
  uint32_t Kind;
  /// A plain store's value (at most 8 bytes), a memset's byte, a copy's source.
  Value *Stored = nullptr;
};

/// The accesses `I` makes, in the order it makes them (a copy reads, then
/// writes).
SmallVector<AccessOf, 2> accessesOf(Instruction &I, const DataLayout &Layout) {
  Type *I64 = Type::getInt64Ty(I.getContext());
  auto Sized = [&](Type *T) -> Value * {
    TypeSize Size = Layout.getTypeStoreSize(T);
    return Size.isScalable() ? nullptr : ConstantInt::get(I64, Size.getFixedValue());
  };
  auto Atomic = [](bool IsAtomic) -> uint32_t { return IsAtomic ? OMPSIM_ACCESS_ATOMIC : 0; };
  SmallVector<AccessOf, 2> Out;
  auto Add = [&](Value *Pointer, Value *Bytes, uint32_t Kind) {
    if (Bytes)
      Out.push_back({Pointer, Bytes, Kind});
  };
  if (auto *L = dyn_cast<LoadInst>(&I))
    Add(L->getPointerOperand(), Sized(L->getType()), OMPSIM_ACCESS_READ | Atomic(L->isAtomic()));
  else if (auto *S = dyn_cast<StoreInst>(&I)) {
    Add(S->getPointerOperand(), Sized(S->getValueOperand()->getType()),
        OMPSIM_ACCESS_WRITE | Atomic(S->isAtomic()));
    // Scalars and vectors of whole bytes up to 8 (a pair of ints stored at
    // once): their bits are their bytes in memory.
    Type *T = S->getValueOperand()->getType();
    TypeSize Bits = Layout.getTypeSizeInBits(T);
    if (!Out.empty() && !S->isAtomic() && !Bits.isScalable() && Bits.getFixedValue() <= 64 &&
        Bits == Layout.getTypeStoreSizeInBits(T) &&
        (T->isIntegerTy() || T->isFloatingPointTy() || T->isPointerTy() || T->isVectorTy())) {
      Out.back().Stored = S->getValueOperand();
      Out.back().Kind |= OMPSIM_ACCESS_VALUE;
    }
  } else if (auto *A = dyn_cast<AtomicRMWInst>(&I))
    Add(A->getPointerOperand(), Sized(A->getValOperand()->getType()),
        OMPSIM_ACCESS_READ | OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_ATOMIC);
  else if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I))
    Add(X->getPointerOperand(), Sized(X->getNewValOperand()->getType()),
        OMPSIM_ACCESS_READ | OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_ATOMIC);
  else if (auto *Copy = dyn_cast<MemTransferInst>(&I)) {
    Add(Copy->getRawSource(), Copy->getLength(), OMPSIM_ACCESS_COPY);
    Add(Copy->getRawDest(), Copy->getLength(), OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_FROM);
    Out.back().Stored = Copy->getRawSource();
  } else if (auto *Set = dyn_cast<MemSetInst>(&I)) {
    Add(Set->getRawDest(), Set->getLength(), OMPSIM_ACCESS_WRITE | OMPSIM_ACCESS_FILL);
    Out.back().Stored = Set->getValue();
  }
  return Out;
}

/// `Stored` as the i64 whose low bytes are its bytes in memory (zero when
/// there is no value to give).
Value *storedBits(IRBuilder<> &B, Value *Stored, const DataLayout &Layout) {
  Type *I64 = B.getInt64Ty();
  if (!Stored)
    return ConstantInt::get(I64, 0);
  Type *T = Stored->getType();
  if (T->isPointerTy())
    return B.CreatePtrToInt(Stored, I64);
  if (T->isPtrOrPtrVectorTy())
    Stored = B.CreatePtrToInt(Stored, VectorType::get(B.getIntNTy(unsigned(Layout.getPointerSizeInBits())),
                                                      cast<VectorType>(T)->getElementCount()));
  if (!Stored->getType()->isIntegerTy())
    Stored = B.CreateBitCast(Stored, B.getIntNTy(unsigned(Layout.getTypeSizeInBits(T).getFixedValue())));
  return B.CreateZExtOrTrunc(Stored, I64);
}

/// Whether an access through `Pointer` may reach memory two GPU threads
/// share: not when it is the function's stack or a constant global.
bool mayBeShared(const Value *Pointer) {
  const Value *Object = getUnderlyingObject(Pointer);
  if (const auto *G = dyn_cast<GlobalVariable>(Object))
    return !G->isConstant();
  return !isa<AllocaInst>(Object);
}

} // namespace

void instrumentAccesses(Module &M) {
  LLVMContext &Ctx = M.getContext();
  const DataLayout &Layout = M.getDataLayout();
  Type *Ptr = PointerType::get(Ctx, 0);
  Type *I64 = Type::getInt64Ty(Ctx);
  Type *I32 = Type::getInt32Ty(Ctx);
  FunctionCallee Check =
      M.getOrInsertFunction(CheckAccessEntry, Type::getVoidTy(Ctx), Ptr, I64, I32, Ptr, I64);
  SourceSites Sites(M);
  for (Function &F : M) {
    if (F.isDeclaration() || &F == Check.getCallee())
      continue;
    std::vector<Instruction *> Accessing;
    for (Instruction &I : instructions(F))
      if (isa<LoadInst, StoreInst, AtomicRMWInst, AtomicCmpXchgInst, MemIntrinsic>(I))
        Accessing.push_back(&I);
    for (Instruction *I : Accessing) {
      IRBuilder<> B(I);
      for (const AccessOf &A : accessesOf(*I, Layout)) {
        if (!mayBeShared(A.Pointer))
          continue;
        Value *Pointer = B.CreatePointerBitCastOrAddrSpaceCast(A.Pointer, Ptr);
        Value *Bytes = B.CreateZExtOrTrunc(A.Bytes, I64);
        B.CreateCall(Check,
                     {Pointer, Bytes, B.getInt32(A.Kind), Sites.of(*I), storedBits(B, A.Stored, Layout)});
      }
    }
  }
}

} // namespace ompsim::sim::gpu
