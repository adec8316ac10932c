package dev.once.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class StoredResponseCodecTest {

  final StoredResponseCodec codec = StoredResponseCodec.INSTANCE;

  @Test
  void roundTripsStatusHeadersAndEveryByteOfTheBody() {
    byte[] body = new byte[256];
    for (int i = 0; i < body.length; i++) {
      body[i] = (byte) i;
    }
    StoredResponse response = new StoredResponse(201, List.of(
        new StoredResponse.Header("Content-Type", "application/json; charset=UTF-8"),
        new StoredResponse.Header("Link", "</a>; rel=\"next\""),
        new StoredResponse.Header("Link", "</b>; rel=\"prev\"")), body);

    StoredResponse decoded = codec.decode(codec.encode(response));

    assertThat(decoded.status()).isEqualTo(201);
    assertThat(decoded.headers()).isEqualTo(response.headers());
    assertThat(decoded.body()).isEqualTo(body);
  }

  @Test
  void aResponseWithoutItsBodyRoundTripsAsSuchAndEveryEncodedSizeIsKnownInAdvance() {
    StoredResponse whole = new StoredResponse(201, List.of(
        new StoredResponse.Header("Location", "/charges/ch_é1")), new byte[300]);
    StoredResponse bodiless = whole.withoutBody();

    StoredResponse decoded = codec.decode(codec.encode(bodiless));

    assertThat(decoded.bodyStored()).isFalse();
    assertThat(decoded.status()).isEqualTo(201);
    assertThat(decoded.headers()).isEqualTo(whole.headers());
    assertThat(decoded.body()).isEmpty();
    assertThat(codec.decode(codec.encode(whole)).bodyStored()).isTrue();
    assertThat(StoredResponseCodec.encodedSize(whole)).isEqualTo(codec.encode(whole).length);
    assertThat(StoredResponseCodec.encodedSize(bodiless)).isEqualTo(codec.encode(bodiless).length);
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new StoredResponse(200, List.of(), new byte[1], false));
  }

  @Test
  void refusesBytesItDidNotWrite() {
    byte[] encoded = codec.encode(new StoredResponse(200, List.of(), new byte[10]));
    assertThatIllegalArgumentException()
        .isThrownBy(() -> codec.decode(Arrays.copyOf(encoded, encoded.length - 1)));
    byte[] otherVersion = encoded.clone();
    otherVersion[0] = 9;
    assertThatIllegalArgumentException().isThrownBy(() -> codec.decode(otherVersion));
    assertThatIllegalArgumentException().isThrownBy(() -> codec.decode(new byte[0]));
  }
}
