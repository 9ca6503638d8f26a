# Your application's sources: every .c, .cpp and .S file under src/app/ is compiled into the product
# image with src/main.cpp (not into `armgen run`'s image, which has armgen's own main).
# This file is yours: armgen writes it once, and `armgen update` keeps your edits (add include
# directories, definitions or libraries below). CONFIGURE_DEPENDS: a new file is picked up by the
# next build without re-running CMake by hand.
file(GLOB_RECURSE ARMGEN_APP_SOURCES CONFIGURE_DEPENDS
  "${CMAKE_CURRENT_SOURCE_DIR}/src/app/*.c"
  "${CMAKE_CURRENT_SOURCE_DIR}/src/app/*.cpp"
  "${CMAKE_CURRENT_SOURCE_DIR}/src/app/*.S")
set(ARMGEN_APP_INCLUDE_DIRS "${CMAKE_CURRENT_SOURCE_DIR}/src/app")
