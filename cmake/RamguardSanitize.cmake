# Sanitizers for every target (RAMGUARD_SANITIZE): ON = AddressSanitizer + UndefinedBehavior-
# Sanitizer, thread = ThreadSanitizer. Processes whose memory the tests measure opt out with
# ramguard_unsanitized(): shadow memory would add ~1/8 to every reading of them.
if(RAMGUARD_SANITIZE STREQUAL "thread")
  set(RAMGUARD_SANITIZER_FLAGS -fsanitize=thread)
  add_compile_options(${RAMGUARD_SANITIZER_FLAGS} -fno-omit-frame-pointer)
  # GCC warns that TSan does not model asio's atomic_thread_fence; the fence is asio's, in its
  # headers, and the daemon's modules (sampling and up) include them.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan)
  endif()
elseif(RAMGUARD_SANITIZE)
  set(RAMGUARD_SANITIZER_FLAGS -fsanitize=address,undefined)
  add_compile_options(${RAMGUARD_SANITIZER_FLAGS} -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
endif()

if(RAMGUARD_SANITIZER_FLAGS)
  add_link_options(${RAMGUARD_SANITIZER_FLAGS})
  # GCC 12 misreports asio's coroutine frame allocation as a new/delete mismatch under ASan, and
  # the instrumentation makes -Wmaybe-uninitialized fire inside libstdc++ (std::regex's NFA);
  # the normal build keeps both warnings as errors.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-mismatched-new-delete -Wno-maybe-uninitialized)
  endif()
endif()

# The target is built and linked without any sanitizer, whatever RAMGUARD_SANITIZE says.
function(ramguard_unsanitized target)
  if(RAMGUARD_SANITIZER_FLAGS)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
    target_link_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()
