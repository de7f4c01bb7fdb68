// clangcc.cpp - the in-process C compiler: Clang's driver turns a clang
// command line into the compiler's own (-cc1) arguments, exactly as the
// clang program does (so -O3, -march=native, --target=, -mcpu= mean the
// same), and the compiler instance emits the object into memory. The JIT
// links such objects with ORC's LLJIT and calls their main(). The only C++
// file of onnxc; tools/clangcc.h is its C interface (docs/clang.md).
#include "clangcc.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Driver/Job.h>
#include <clang/Driver/Tool.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/JITLink/JITLinkMemoryManager.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#ifndef ONNXC_CLANG_RESOURCE_DIR
#error "ONNXC_CLANG_RESOURCE_DIR: the folder of Clang's own headers (CMake sets it)"
#endif

namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers(); // module-level asm: the weights' .incbin
  });
}

char *heap_string(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p)
    std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

} // namespace

extern "C" bool clangcc_available(void) { return true; }

extern "C" const char *clangcc_host_triple(void) {
  static std::string triple = llvm::sys::getDefaultTargetTriple();
  return triple.c_str();
}

extern "C" bool clangcc_compile(const char *const *args, int n_args, void **obj, size_t *len, char **log) {
  init_llvm();
  *obj = nullptr;
  *len = 0;
  *log = nullptr;
  std::string text;
  llvm::raw_string_ostream los(text);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> dopts = new clang::DiagnosticOptions();
  auto *printer = new clang::TextDiagnosticPrinter(los, &*dopts);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs> ids(new clang::DiagnosticIDs());
  clang::DiagnosticsEngine diags(ids, &*dopts, printer);

  // The driver: "clang FLAGS -c SRC" to the -cc1 job it would run.
  std::vector<const char *> argv = {"clang"};
  for (int i = 0; i < n_args; i++)
    argv.push_back(args[i]);
  argv.insert(argv.end(), {"-c", "-resource-dir", ONNXC_CLANG_RESOURCE_DIR, "-o", "-"});
  clang::driver::Driver driver("clang", llvm::sys::getDefaultTargetTriple(), diags);
  driver.setCheckInputsExist(true);
  std::unique_ptr<clang::driver::Compilation> comp(driver.BuildCompilation(argv));
  const clang::driver::Command *cc1 = nullptr;
  int n_jobs = 0;
  if (comp && !diags.hasErrorOccurred())
    for (const clang::driver::Command &job : comp->getJobs()) {
      n_jobs++;
      if (std::strcmp(job.getCreator().getName(), "clang") == 0)
        cc1 = &job;
    }
  if (!cc1 || n_jobs != 1) {
    if (!diags.hasErrorOccurred())
      los << "clang: expected one compile job for this command line (one C source)\n";
    los.flush();
    *log = heap_string(text);
    return false;
  }
  const llvm::opt::ArgStringList &cargs = cc1->getArguments(); // "-cc1", ...
  auto inv = std::make_shared<clang::CompilerInvocation>();
  bool ok = clang::CompilerInvocation::CreateFromArgs(*inv, llvm::ArrayRef<const char *>(cargs).drop_front(), diags,
                                                      argv[0]);
  llvm::SmallVector<char, 0> out;
  if (ok) {
    clang::CompilerInstance ci;
    ci.setInvocation(inv);
    ci.createDiagnostics(new clang::TextDiagnosticPrinter(los, &ci.getDiagnosticOpts()), true);
    ci.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(out));
    ci.setVerboseOutputStream(los); // "N warnings generated." into the log, not stderr
    clang::EmitObjAction act;
    ok = ci.ExecuteAction(act) && !ci.getDiagnostics().hasErrorOccurred();
  }
  los.flush();
  if (!text.empty())
    *log = heap_string(text);
  if (!ok)
    return false;
  *obj = std::malloc(out.size() ? out.size() : 1);
  if (!*obj)
    return false;
  std::memcpy(*obj, out.data(), out.size());
  *len = out.size();
  return true;
}

extern "C" bool clangcc_object_symbols(const void *obj, size_t len, char **names, size_t *names_len) {
  *names = nullptr;
  *names_len = 0;
  llvm::MemoryBufferRef ref(llvm::StringRef(static_cast<const char *>(obj), len), "onnxc-object");
  auto file = llvm::object::ObjectFile::createObjectFile(ref);
  if (!file) {
    llvm::consumeError(file.takeError());
    return false;
  }
  std::string all;
  for (const llvm::object::SymbolRef &sym : (*file)->symbols()) {
    auto flags = sym.getFlags();
    auto name = sym.getName();
    if (!flags || !name) {
      if (!flags)
        llvm::consumeError(flags.takeError());
      if (!name)
        llvm::consumeError(name.takeError());
      continue;
    }
    if ((*flags & llvm::object::SymbolRef::SF_Global) && !(*flags & llvm::object::SymbolRef::SF_Undefined) &&
        !name->empty()) {
      all.append(name->data(), name->size());
      all.push_back('\0');
    }
  }
  *names = static_cast<char *>(std::malloc(all.size() + 1));
  if (!*names)
    return false;
  std::memcpy(*names, all.data(), all.size());
  *names_len = all.size();
  return true;
}

extern "C" int clangcc_jit_main(const void *const *objs, const size_t *lens, int n_objs, int argc, char **argv,
                                char **log) {
  init_llvm();
  *log = nullptr;
  auto fail = [&](llvm::Error e) {
    *log = heap_string(llvm::toString(std::move(e)));
    return -1;
  };
  // JITLink with one mapping per object: code, constants and weights stay
  // within the +-2 GB of the small code model's RIP-relative references.
  // (RuntimeDyld mapped the sections apart: BERT-base's 438 MB of weights put
  // a constant pool out of reach of its kernels and the run crashed.)
  auto jit = llvm::orc::LLJITBuilder()
                 .setObjectLinkingLayerCreator(
                     [](llvm::orc::ExecutionSession &es,
                        const llvm::Triple &) -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                       auto mm = llvm::jitlink::InProcessMemoryManager::Create();
                       if (!mm)
                         return mm.takeError();
                       return std::make_unique<llvm::orc::ObjectLinkingLayer>(es, std::move(*mm));
                     })
                 .create();
  if (!jit)
    return fail(jit.takeError());
  llvm::orc::LLJIT &j = **jit;
  // libc, libm and libpthread: the symbols of this process and its libraries.
  auto host = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(j.getDataLayout().getGlobalPrefix());
  if (!host)
    return fail(host.takeError());
  j.getMainJITDylib().addGenerator(std::move(*host));
  for (int i = 0; i < n_objs; i++) {
    llvm::StringRef bytes(static_cast<const char *>(objs[i]), lens[i]);
    if (llvm::Error e = j.addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(bytes, "onnxc-object")))
      return fail(std::move(e));
  }
  auto sym = j.lookup("main");
  if (!sym)
    return fail(sym.takeError());
  if (llvm::Error e = j.initialize(j.getMainJITDylib()))
    return fail(std::move(e));
#if LLVM_VERSION_MAJOR >= 15
  auto fn = sym->toPtr<int (*)(int, char **)>();
#else
  auto fn = reinterpret_cast<int (*)(int, char **)>(static_cast<uintptr_t>(sym->getAddress()));
#endif
  return fn(argc, argv);
}
