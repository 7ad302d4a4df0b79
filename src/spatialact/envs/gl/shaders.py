"""GLSL of the gl renderer: the lit colour pass, the depth-and-segmentation pass and the shadow pass.

Vertices carry a position and normal in their link's frame, texture coordinates, an sRGB colour and three integers
(slot: the row of the per-link matrix texture; layer: the texture-array layer or −1; the PyBullet body id). Link
matrices are read from an RGBA32F texture whose row ``slot`` holds the four columns of that link's world matrix.
Lighting is in linear light: vertex colours are decoded from sRGB here, textures are sRGB textures (decoded by the
GL when sampled and filtered), and the colour target is an sRGB framebuffer (encoded by the GL on write, resolved in
linear light). The default quality has no multisampling: its colour pass (:data:`COLOR_FS_SRGB`) encodes sRGB itself
into a plain RGBA8 target, and an edge-smoothing pass (:data:`SMOOTH_FS`) runs over the encoded image.
"""

_COMMON = """
#version 330
uniform sampler2D u_mats;
in vec3 in_pos;
in ivec3 in_ids;
mat4 slot_matrix(int s) {
    return mat4(texelFetch(u_mats, ivec2(0, s), 0), texelFetch(u_mats, ivec2(1, s), 0),
                texelFetch(u_mats, ivec2(2, s), 0), texelFetch(u_mats, ivec2(3, s), 0));
}
"""

COLOR_VS = _COMMON + """
uniform mat4 u_viewproj;
uniform mat4 u_view;
in vec3 in_nrm;
in vec2 in_uv;
in vec4 in_col;
out vec3 v_world;
out vec3 v_nrm;
out vec2 v_uv;
out vec4 v_col;
out float v_z;
flat out int v_layer;
flat out int v_seg;
vec3 srgb_to_linear(vec3 c) {
    return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), step(vec3(0.04045), c));
}
void main() {
    mat4 M = slot_matrix(in_ids.x);
    vec4 w = M * vec4(in_pos, 1.0);
    v_world = w.xyz;
    v_nrm = mat3(M) * in_nrm;
    v_uv = in_uv;
    v_col = vec4(srgb_to_linear(in_col.rgb), in_col.a);
    v_layer = in_ids.y;
    v_seg = in_ids.z;
    v_z = -(u_view * w).z;
    gl_Position = u_viewproj * w;
}
"""

COLOR_FS = """
#version 330
uniform sampler2DArray u_tex;
uniform sampler2DShadow u_shadow;
uniform mat4 u_light_vp;
uniform vec3 u_light_dir;
uniform vec3 u_light_col;
uniform vec3 u_eye;
uniform vec3 u_sky;
uniform vec3 u_ground;
uniform float u_ambient;
uniform float u_diffuse;
uniform float u_specular;
uniform float u_shininess;
uniform float u_texel;
uniform int u_shadows;
in vec3 v_world;
in vec3 v_nrm;
in vec2 v_uv;
in vec4 v_col;
in float v_z;
flat in int v_layer;
flat in int v_seg;
layout(location = 0) out vec4 f_col;
layout(location = 1) out vec2 f_zs;
vec3 encode(vec3 c) {
#ifdef SRGB_OUT
    c = clamp(c, 0.0, 1.0);  // linear light to sRGB here: the target is plain RGBA8
    return mix(c * 12.92, 1.055 * pow(c, vec3(1.0 / 2.4)) - 0.055, step(vec3(0.0031308), c));
#else
    return c;  // linear light: the sRGB target encodes on write (and MSAA resolves in linear light)
#endif
}
float lit(vec3 p, vec3 n) {
    if (u_shadows == 0) return 1.0;
    vec4 q = u_light_vp * vec4(p + n * (1.5 * u_texel), 1.0);
    vec3 s = q.xyz / q.w * 0.5 + 0.5;
    if (s.x <= 0.0 || s.x >= 1.0 || s.y <= 0.0 || s.y >= 1.0 || s.z >= 1.0) return 1.0;
    vec2 t = vec2(1.0) / vec2(textureSize(u_shadow, 0));
    float acc = 0.0;
    acc += texture(u_shadow, vec3(s.xy + vec2(-0.5, -0.5) * t, s.z));
    acc += texture(u_shadow, vec3(s.xy + vec2(0.5, -0.5) * t, s.z));
    acc += texture(u_shadow, vec3(s.xy + vec2(-0.5, 0.5) * t, s.z));
    acc += texture(u_shadow, vec3(s.xy + vec2(0.5, 0.5) * t, s.z));
    return acc * 0.25;
}
void main() {
    vec4 base = v_col;
    if (v_layer >= 0) base *= texture(u_tex, vec3(v_uv, float(v_layer)));
    vec3 n = normalize(v_nrm);
    vec3 V = normalize(u_eye - v_world);
    if (dot(n, V) < 0.0) n = -n;  // two-sided: light the side the camera sees
    vec3 L = u_light_dir;
    float ndl = max(dot(n, L), 0.0);
    float sh = ndl > 0.0 ? lit(v_world, n) : 0.0;
    vec3 H = normalize(L + V);
    float spec = ndl > 0.0 ? pow(max(dot(n, H), 0.0), u_shininess) : 0.0;
    vec3 hemi = mix(u_ground, u_sky, 0.5 + 0.5 * n.z);
    vec3 c = base.rgb * (u_ambient * hemi + u_diffuse * ndl * sh * u_light_col) + u_specular * spec * sh * u_light_col;
    f_col = vec4(encode(c), 1.0);
    f_zs = vec2(v_z, float(v_seg + 1));  // at the pixel centre (MSAA interpolates there); 0, 0: background
}
"""

# The default quality's colour pass: the same shading, encoded to sRGB in the shader (no sRGB target, no MSAA).
COLOR_FS_SRGB = COLOR_FS.replace("#version 330\n", "#version 330\n#define SRGB_OUT\n", 1)

DEPTH_VS = _COMMON + """
uniform mat4 u_viewproj;
uniform mat4 u_view;
flat out int v_seg;
out float v_z;
void main() {
    vec4 w = slot_matrix(in_ids.x) * vec4(in_pos, 1.0);
    v_z = -(u_view * w).z;
    v_seg = in_ids.z;
    gl_Position = u_viewproj * w;
}
"""

DEPTH_FS = """
#version 330
flat in int v_seg;
in float v_z;
out vec2 f_out;
void main() {
    f_out = vec2(v_z, float(v_seg + 1));  // 0 in both stays "background" (the clear value)
}
"""

RESOLVE_VS = """
#version 330
void main() {  // one triangle over the whole viewport
    vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
"""

# Depth and body id of a multisampled pixel: the body that covers most of its samples (ties: the nearer), at its
# nearest sample's depth (each sample holds the depth at the pixel centre of the triangle that covered it).
RESOLVE_FS = """
#version 330
uniform sampler2DMS u_ms;
uniform int u_samples;
out vec2 f_out;
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    vec2 s[8];
    for (int i = 0; i < u_samples; i++) s[i] = texelFetch(u_ms, p, i).xy;
    int bestn = -1;
    float bestz = 1e30;
    float bestid = 0.0;
    for (int i = 0; i < u_samples; i++) {
        int n = 0;
        float z = 1e30;
        for (int j = 0; j < u_samples; j++) {
            if (s[j].y == s[i].y) {
                n++;
                if (s[j].y > 0.0) z = min(z, s[j].x);
            }
        }
        if (n > bestn || (n == bestn && z < bestz)) {
            bestn = n;
            bestz = z;
            bestid = s[i].y;
        }
    }
    f_out = bestid > 0.0 ? vec2(bestz, bestid) : vec2(0.0);
}
"""

SHADOW_VS = _COMMON + """
uniform mat4 u_light_vp;
uniform float u_clip_z;
out float gl_ClipDistance[1];
void main() {
    vec4 w = slot_matrix(in_ids.x) * vec4(in_pos, 1.0);
    gl_ClipDistance[0] = u_clip_z - w.z;  // a ceiling casts no shadow
    gl_Position = u_light_vp * w;
}
"""

SHADOW_FS = """
#version 330
void main() {}
"""

# Edge smoothing of the default quality (no MSAA): a pixel on a contrast edge is blended with its neighbour across the
# edge, by how far it sits from the mean of its four neighbours. Luma from the sRGB-encoded values; five texel reads,
# no filtering, so the result is a fixed function of the image (deterministic); neighbours are clamped to the pixel's
# tile (``u_tile``: tile size in pixels), so views drawn side by side never mix. Flat areas and gentle gradients are
# left as they are (local luma range under max(1/16, 1/6 of the brightest)).
SMOOTH_FS = """
#version 330
uniform sampler2D u_img;
uniform ivec2 u_tile;
out vec4 f_col;
float luma(vec3 c) { return dot(c, vec3(0.299, 0.587, 0.114)); }
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    ivec2 t0 = (p / u_tile) * u_tile;
    ivec2 t1 = t0 + u_tile - 1;
    vec3 cM = texelFetch(u_img, p, 0).rgb;
    vec3 cN = texelFetch(u_img, clamp(p + ivec2(0, 1), t0, t1), 0).rgb;
    vec3 cS = texelFetch(u_img, clamp(p - ivec2(0, 1), t0, t1), 0).rgb;
    vec3 cE = texelFetch(u_img, clamp(p + ivec2(1, 0), t0, t1), 0).rgb;
    vec3 cW = texelFetch(u_img, clamp(p - ivec2(1, 0), t0, t1), 0).rgb;
    float lM = luma(cM), lN = luma(cN), lS = luma(cS), lE = luma(cE), lW = luma(cW);
    float lo = min(lM, min(min(lN, lS), min(lE, lW)));
    float hi = max(lM, max(max(lN, lS), max(lE, lW)));
    float range = hi - lo;
    if (range < max(0.0625, hi * 0.166)) {
        f_col = vec4(cM, 1.0);
        return;
    }
    float w = clamp(abs((lN + lS + lE + lW) * 0.25 - lM) / range, 0.0, 1.0);
    w = w * w * (3.0 - 2.0 * w) * 0.375;
    vec3 nb;
    if (abs(lN + lS - 2.0 * lM) >= abs(lE + lW - 2.0 * lM)) nb = abs(lN - lM) >= abs(lS - lM) ? cN : cS;
    else nb = abs(lE - lM) >= abs(lW - lM) ? cE : cW;
    f_col = vec4(mix(cM, nb, w), 1.0);
}
"""
